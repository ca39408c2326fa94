"""a2a_client against real servers on 127.0.0.1: a2a_min on every host and
binding, the reference SDK's server, and small servers that misbehave on
purpose (HTML, a 502, a cut stream, a huge event, a redirect elsewhere, an
agent that never answers). The command line's verbs (a2a_cli.py) run as a
user runs them, and the curl lines --curl prints are run with curl."""

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time

import pytest

import a2a_client
import a2a_min
import a2a_cli
from harness import (ROOT, AsgiHostClient, AsyncioHostClient, Live, ThreadsHostClient,
                     WsgiHostClient, free_port, grpc_available, need, require_sdk, run_host,
                     scenario_agent)

HOSTS = {"threads": ThreadsHostClient, "asyncio": AsyncioHostClient, "wsgi": WsgiHostClient,
         "asgi": AsgiHostClient}


def agent_server(**options):
    options.setdefault("authenticate", a2a_min.BearerAuth({"t0k": "me"}, anonymous=True))
    return a2a_min.Server(scenario_agent, name="Test agent", description="For tests.",
                          push_notifications=True, extended_card={"description": "more"},
                          **options)


@pytest.fixture(params=sorted(HOSTS))
def hosted(request):
    """(base URL, Server) of an a2a_min server on a real host."""
    if request.param == "asgi":
        need("uvicorn", "ASGI host: needs uvicorn (the test extra)")
    server = agent_server()
    host = HOSTS[request.param](server)
    yield f"http://127.0.0.1:{host.port}", server
    host.close()


def states(events):
    return [(e.get("task") or e.get("statusUpdate") or {}).get("status", {}).get("state")
            for e in events]


def exercise_every_operation(client, slow="slow"):
    """The eleven operations through ``client``, each checked."""
    answer = client.send("hello")
    task = answer["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["artifacts"][0]["parts"][0]["text"] == "echo: hello"
    waiting = client.send("wait")["task"]
    assert waiting["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    more = client.send("more", task_id=waiting["id"])["task"]
    assert more["id"] == waiting["id"] and more["status"]["state"] == "TASK_STATE_COMPLETED"
    assert client.send("direct")["message"]["parts"][0]["text"] == "a direct reply"

    events = list(client.stream("chunks"))
    assert "task" in events[0] and states(events)[-1] == "TASK_STATE_COMPLETED"
    assert "".join(e["artifactUpdate"]["artifact"]["parts"][0]["text"]
                   for e in events if "artifactUpdate" in e) == "one two three"

    got = client.get_task(task["id"], history_length=0)
    assert got["id"] == task["id"] and "history" not in got
    page = client.list_tasks(pageSize=1)
    assert len(page["tasks"]) == 1 and page["nextPageToken"]

    running = client.send(slow, immediate=True)["task"]
    follow = client.subscribe(running["id"])
    first = next(follow)
    assert first["task"]["id"] == running["id"]
    canceled = client.cancel_task(running["id"])
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
    assert states(list(follow))[-1] == "TASK_STATE_CANCELED"
    with pytest.raises(a2a_min.TaskNotCancelableError):
        client.cancel_task(running["id"])
    with pytest.raises(a2a_min.TaskNotFoundError) as caught:
        client.get_task("no-such-task")
    assert "no-such-task" in caught.value.message
    with pytest.raises(a2a_min.UnsupportedOperationError):
        client.subscribe(task["id"])                  # a terminal task cannot be followed

    config = client.create_push_config(task["id"], "https://hooks.invalid/a2a", token="t0k")
    assert config["taskId"] == task["id"] and config["url"] == "https://hooks.invalid/a2a"
    assert client.get_push_config(task["id"], config["id"])["token"] == "t0k"
    assert [c["id"] for c in client.list_push_configs(task["id"])["configs"]] == [config["id"]]
    assert client.delete_push_config(task["id"], config["id"]) == {}
    assert client.list_push_configs(task["id"]).get("configs", []) == []
    with pytest.raises(a2a_min.AuthenticationRequiredError):
        client.extended_card()                      # (for authenticated callers: 13.3)
    client.headers["Authorization"] = "Bearer t0k"
    assert client.extended_card()["description"] == "more"
    del client.headers["Authorization"]


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
def test_every_operation_on_every_host(hosted, binding):
    url, _ = hosted
    with a2a_client.Client(url, binding=binding) as client:
        assert client.binding == binding
        exercise_every_operation(client)


def test_every_operation_over_grpc():
    if not grpc_available():
        need("grpc", "the gRPC binding needs the grpc extra")
    import a2a_grpc
    server = agent_server()
    grpc_server, port = a2a_grpc.create_server(server, "127.0.0.1:0")
    grpc_server.start()
    live = Live(server)
    try:
        with a2a_client.Client(live.url, binding="GRPC") as client:
            assert client.binding == "GRPC" and client.url.endswith(f"127.0.0.1:{port}")
            exercise_every_operation(client)
    finally:
        live.close()
        grpc_server.stop(0)


def test_a_resumed_stream_misses_nothing_and_repeats_nothing():
    """Last-Event-ID on a real server: a stream closed after its second event
    and resumed from there gives the rest of the events, once each."""
    live = Live(agent_server())
    try:
        with a2a_client.Client(live.url) as client:
            whole = list(client.stream("ticks"))
            stream = client.stream("ticks")
            head = [next(stream), next(stream)]
            last = stream.last_event_id
            stream.close()
            rest = list(client.subscribe(stream.task_id, last_event_id=last))
            kinds = [sorted(e) for e in head + rest]
            assert len(head + rest) == len(whole) and kinds == [sorted(e) for e in whole]
            assert states(rest)[-1] == "TASK_STATE_COMPLETED"
    finally:
        live.close()


def test_tenant_and_extensions_reach_the_server():
    seen = []

    def agent(ctx):
        seen.append((ctx.caller.tenant, tuple(ctx.extensions)))
        return "ok"
    server = a2a_min.Server(agent)
    live = Live(server)
    try:
        for binding in ("JSONRPC", "HTTP+JSON"):
            with a2a_client.Client(live.url, binding=binding, tenant="acme",
                                   extensions=["https://ext.example/x"]) as client:
                task = client.send("hi")["task"]
                assert client.get_task(task["id"])["id"] == task["id"]
                with pytest.raises(a2a_min.TaskNotFoundError):
                    a2a_client.Client(live.url, binding=binding).get_task(task["id"])
        # (and the extension the card declares, announced so that a lost send may go again)
        assert seen == [("acme", ("https://ext.example/x", a2a_min.IDEMPOTENT_SEND))] * 2
    finally:
        live.close()


def test_auth_a_header_value_or_a_callable_by_the_cards_schemes():
    tokens = {"s3cret": "alice"}
    server = a2a_min.Server(lambda text: "ok", authenticate=a2a_min.BearerAuth(tokens))
    live = Live(server)
    try:
        with pytest.raises(a2a_min.AuthenticationRequiredError):
            a2a_client.Client(live.url).send("hi")
        assert a2a_client.Client(live.url, auth="Bearer s3cret").send("hi")["task"]
        asked = []

        def secret(scheme):
            asked.append(scheme)
            return "s3cret"
        client = a2a_client.Client(live.url, auth=secret, binding="HTTP+JSON")
        assert client.send("hi")["task"] and asked == list(client.card["securitySchemes"])
        assert client.headers["Authorization"] == "Bearer s3cret"
    finally:
        live.close()


def test_keep_alive_connections_are_reused():
    live = Live(agent_server())
    accepted = []
    original = live.httpd.get_request

    def counting():
        accepted.append(1)
        return original()
    live.httpd.get_request = counting
    try:
        with a2a_client.Client(live.url) as client:
            for _ in range(5):
                client.send("hi")
                client.get_task(client.send("hi")["task"]["id"])
        assert len(accepted) == 1                 # the card and 15 calls on one connection
    finally:
        live.close()


def test_on_the_lambda_handler_behind_the_local_runner():
    """The demo as a Lambda function (examples/lambda_function.py), reached as
    API Gateway would reach it: streams arrive whole, once the turn is over."""
    port = free_port()
    proc = run_host([sys.executable, "examples/lambda_local.py", str(port)], port)
    try:
        for binding in ("JSONRPC", "HTTP+JSON"):
            with a2a_client.Client(f"http://127.0.0.1:{port}", binding=binding) as client:
                task = client.send("hello")["task"]
                assert a2a_client._text(task["artifacts"][0]["parts"]) == "You said: hello"
                events = list(client.stream("hello there"))
                assert "task" in events[0] and states(events)[-1] == "TASK_STATE_COMPLETED"
                waiting = client.send("wait a moment")["task"]
                assert waiting["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
                assert client.get_task(waiting["id"])["id"] == waiting["id"]
                assert client.list_tasks(pageSize=1)["tasks"]
                assert client.cancel_task(waiting["id"])["status"]["state"] == \
                    "TASK_STATE_CANCELED"
                with pytest.raises(a2a_min.TaskNotFoundError):
                    client.get_task("nope")
    finally:
        proc.terminate()
        proc.wait(10)


# -- the reference SDK's server ------------------------------------------------

def test_against_the_reference_sdks_server():
    require_sdk()
    need("uvicorn", "the SDK's server runs under uvicorn (test extra)")
    port = free_port()
    proc = run_host([sys.executable, "benchmarks/sdk_echo_server.py", str(port)], port)
    try:
        url = f"http://127.0.0.1:{port}"
        for binding in ("JSONRPC", "HTTP+JSON"):
            with a2a_client.Client(url, binding=binding) as client:
                task = client.send("hello")["task"]
                assert task["status"]["state"] == "TASK_STATE_COMPLETED"
                assert "hello" in json.dumps(task["artifacts"])
                assert client.get_task(task["id"])["id"] == task["id"]
                assert any(t["id"] == task["id"] for t in client.list_tasks()["tasks"])
                events = list(client.stream("streamed"))
                assert states(events)[-1] == "TASK_STATE_COMPLETED"
                with pytest.raises(a2a_min.TaskNotFoundError):
                    client.get_task("00000000-0000-0000-0000-000000000000")
                with pytest.raises(a2a_min.TaskNotCancelableError):
                    client.cancel_task(task["id"])
        done = cli("send", url, "from the command line")          # and the command line
        assert done.returncode == 0 and "COMPLETED" in done.stdout, done.stderr
        streamed = cli("send", url, "streamed", "--stream", "--binding", "http+json")
        assert streamed.stdout.splitlines()[-1].endswith("status COMPLETED"), streamed.stderr
    finally:
        proc.terminate()
        proc.wait(10)


# -- servers that misbehave ----------------------------------------------------

class Fake:
    """A raw HTTP server on 127.0.0.1: ``answer(request_bytes, n)`` gives the
    bytes to send back for the n-th request (None: send nothing, keep the
    connection open). Each connection serves one request."""

    def __init__(self, answer):
        self.answer = answer
        self.requests = []
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.held = []
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        data = b""
        conn.settimeout(5)
        try:
            while b"\r\n\r\n" not in data:
                data += conn.recv(65536)
            head, _, body = data.partition(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            while len(body) < length:
                body += conn.recv(65536)
        except OSError:
            conn.close()
            return
        self.requests.append(head + b"\r\n\r\n" + body)
        reply = self.answer(head.decode("latin-1"), body, len(self.requests))
        if reply is None:
            self.held.append(conn)
            return
        for piece in reply if isinstance(reply, list) else [reply]:
            if isinstance(piece, float):
                time.sleep(piece)
                continue
            try:
                conn.sendall(piece)
            except OSError:                 # (the client gave up: its timeout)
                break
        conn.close()

    def close(self):
        self.sock.close()
        for conn in self.held:
            conn.close()


def card_for(url, binding="JSONRPC", version="1.0", **extra):
    return {"name": "fake", "description": "d", "version": "1", "capabilities": {"streaming": True},
            "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
            "skills": [], "supportedInterfaces": [{"url": url + "/", "protocolBinding": binding,
                                                  "protocolVersion": version}], **extra}


def http_answer(status, body, kind="application/json", extra=b""):
    if not isinstance(body, bytes):
        body = json.dumps(body).encode()
    return (f"HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {len(body)}\r\n"
            "Connection: close\r\n").encode() + extra + b"\r\n" + body


def sse_head():
    return (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n")


def rpc_event(seq, result, end=b"\n"):
    head = b"" if seq is None else b"id: %d%s" % (seq, end)
    return head + b"data: " + json.dumps({"jsonrpc": "2.0", "id": 1, "result": result}).encode() \
        + end + end


def faking(route):
    """A Fake whose card points at itself; ``route(head, body, n)`` answers
    the rest (n counts the card's request too)."""
    box = {}

    def answer(head, body, n):
        if head.startswith("GET /.well-known/agent-card.json"):
            return http_answer("200 OK", card_for(box["url"]))
        return route(head, body, n)
    fake = Fake(answer)
    box["url"] = fake.url
    return fake


def task_event(state, task_id="t1"):
    return {"task": {"id": task_id, "contextId": "c1", "status": {"state": state}}}


def status_event(state, task_id="t1"):
    return {"statusUpdate": {"taskId": task_id, "contextId": "c1", "status": {"state": state}}}


@pytest.mark.parametrize("answer, expected", [
    (http_answer("200 OK", b"<html><body>Welcome</body></html>", "text/html"),
     "not an A2A endpoint"),
    (http_answer("502 Bad Gateway", b"<html>bad gateway</html>", "text/html"),
     "a proxy or gateway answered HTTP 502"),
    (http_answer("200 OK", b"{not json"), "does not parse"),
    (http_answer("200 OK", {"hello": "world"}), "not a JSON-RPC response"),
    (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"jso",
     "closed the connection in the middle of its answer"),
])
def test_answers_that_are_not_a2a_are_named(answer, expected):
    fake = faking(lambda head, body, n: answer)
    try:
        client = a2a_client.Client(fake.url)
        with pytest.raises(a2a_client.ClientError) as caught:
            client.send("hi")
        assert expected in caught.value.message
    finally:
        fake.close()


def test_a_stream_error_status_is_checked_before_parsing_the_stream():
    """a2a-python#502: a 401, 404 or 500 to a streaming call is that error, not
    'Invalid SSE response'."""
    fake = faking(lambda head, body, n: http_answer("401 Unauthorized", b"go away", "text/plain",
                                                    b"WWW-Authenticate: Bearer\r\n"))
    try:
        with pytest.raises(a2a_min.AuthenticationRequiredError) as caught:
            a2a_client.Client(fake.url).stream("hi")
        assert "--auth" in caught.value.message
    finally:
        fake.close()
    fake = faking(lambda head, body, n: http_answer("200 OK", {
        "jsonrpc": "2.0", "id": 1, "error": {"code": -32001, "message": "no such task"}}))
    try:
        with pytest.raises(a2a_min.TaskNotFoundError):
            a2a_client.Client(fake.url).subscribe("t1")
    finally:
        fake.close()


def test_keepalive_comments_cr_line_ends_and_multiline_data():
    """a2a-python#540: keep-alive comments are skipped; CR and CRLF end lines."""
    event = json.dumps({"jsonrpc": "2.0", "id": 1, "result": task_event("TASK_STATE_WORKING")})
    half = event.index("\"result\"")          # (between two tokens: a newline is whitespace)
    final = rpc_event(1, status_event("TASK_STATE_COMPLETED"), b"\r\n")
    fake = faking(lambda head, body, n: [
        sse_head(), b": keep-alive\n\n", b"id: 0\r", b"data: " + event[:half].encode() + b"\r",
        0.05, b"data: " + event[half:].encode() + b"\r\r", b":\n\n", final[:7], 0.05, final[7:]])
    try:
        stream = a2a_client.Client(fake.url).stream("hi")
        events = list(stream)
        assert states(events) == ["TASK_STATE_WORKING", "TASK_STATE_COMPLETED"]
        assert stream.last_event_id == "1" and stream.resumed == 0
    finally:
        fake.close()


def test_a_dropped_stream_resumes_with_last_event_id():
    def route(head, body, n):
        if n == 2:         # the stream: two events, then the connection drops
            return [sse_head(), rpc_event(0, task_event("TASK_STATE_WORKING")),
                    rpc_event(1, status_event("TASK_STATE_WORKING"))]
        assert "Last-Event-ID: 1" in head and b'"SubscribeToTask"' in body
        return [sse_head(), rpc_event(2, status_event("TASK_STATE_COMPLETED"))]
    fake = faking(route)
    try:
        stream = a2a_client.Client(fake.url).stream("hi")
        assert len(list(stream)) == 3 and stream.resumed == 1 and stream.last_event_id == "2"
    finally:
        fake.close()


def test_a_stream_cut_mid_event_before_naming_its_task():
    fake = faking(lambda head, body, n: [sse_head(), b'id: 0\ndata: {"jsonrpc": "2.0", "res'])
    try:
        with pytest.raises(a2a_client.ClientError) as caught:
            list(a2a_client.Client(fake.url).stream("hi"))
        assert "the stream ended before the task did" in caught.value.message
    finally:
        fake.close()


def test_a_task_that_ended_while_the_stream_was_away_ends_the_stream():
    def route(head, body, n):
        if n == 2:
            return [sse_head(), rpc_event(0, task_event("TASK_STATE_WORKING"))]
        if b'"SubscribeToTask"' in body:
            return http_answer("200 OK", {"jsonrpc": "2.0", "id": 1, "error": {
                "code": -32004, "message": "the task is terminal"}})
        return http_answer("200 OK", {"jsonrpc": "2.0", "id": 1,
                                      "result": task_event("TASK_STATE_COMPLETED")["task"]})
    fake = faking(route)
    try:
        assert states(list(a2a_client.Client(fake.url).stream("hi")))[-1] == \
            "TASK_STATE_COMPLETED"
    finally:
        fake.close()


def test_an_event_over_the_size_limit():
    big = b"data: " + b"x" * 300_000
    fake = faking(lambda head, body, n: [sse_head(), big, b"\n\n"])
    try:
        with pytest.raises(a2a_client.ClientError) as caught:
            list(a2a_client.Client(fake.url, max_event_bytes=100_000).stream("hi"))
        assert "larger than 100000 bytes" in caught.value.message
    finally:
        fake.close()


def test_an_agent_that_never_answers_is_a_timeout():
    fake = faking(lambda head, body, n: None)
    try:
        client = a2a_client.Client(fake.url, timeout=0.5)
        started = time.monotonic()
        with pytest.raises(a2a_client.ClientError) as caught:
            client.send("hi")
        assert time.monotonic() - started < 3
        assert "did not answer within 0.5 s" in caught.value.message
    finally:
        fake.close()


def test_a_redirect_to_another_host_is_not_followed():
    fake = Fake(lambda head, body, n: http_answer(
        "302 Found", b"", extra=b"Location: http://127.0.0.2:9/.well-known/agent-card.json\r\n"))
    try:
        with pytest.raises(a2a_client.ClientError) as caught:
            a2a_client.Client(fake.url)
        assert "redirects to another host" in caught.value.message
    finally:
        fake.close()


def test_cards_without_a_usable_interface():
    with pytest.raises(a2a_client.ClientError) as caught:
        a2a_client.Client(card_for("http://127.0.0.1:9", binding="CARRIER-PIGEON"))
    assert "no interface of this agent card can be used" in caught.value.message
    assert "CARRIER-PIGEON 1.0" in caught.value.message
    # An agent that speaks only 0.3: over JSON-RPC, HTTP+JSON (and gRPC, with
    # grpcio) the client translates (a2a_v03, tests/test_v03.py).
    old = {"name": "old", "url": "http://127.0.0.1:9/", "protocolVersion": "0.3.0",
           "preferredTransport": "JSONRPC"}
    assert a2a_client.choose_interface(old, None)["protocolVersion"] == "0.3"
    assert a2a_client.choose_interface(card_for("http://127.0.0.1:9", version="0.3"), None
                                       )["protocolVersion"] == "0.3"
    assert a2a_client.choose_interface(card_for("http://127.0.0.1:9", binding="HTTP+JSON",
                                                version="0.3"), None) == {
        "url": "http://127.0.0.1:9/", "protocolBinding": "HTTP+JSON", "protocolVersion": "0.3"}
    with pytest.raises(a2a_client.ClientError) as caught:
        a2a_client.Client(card_for("http://127.0.0.1:9", binding="SMTP", version="0.3"))
    assert "speaks only A2A 0.x" in caught.value.message
    with pytest.raises(a2a_client.ClientError) as caught:
        a2a_client.Client({**old, "preferredTransport": "SMTP"})
    assert "A2A 0.3.0 card" in caught.value.message


def test_an_interface_on_0_0_0_0_or_localhost_means_the_cards_host():
    card = card_for("http://0.0.0.0:8000")
    assert a2a_client.choose_interface(card, "http://10.1.2.3:8000/.well-known/agent-card.json"
                                       )["url"] == "http://10.1.2.3:8000/"
    card = card_for("http://localhost:8000")
    assert a2a_client.choose_interface(card, "https://agents.example/.well-known/agent-card.json"
                                       )["url"] == "https://agents.example/"
    assert a2a_client.choose_interface(card, "http://127.0.0.1:8000/.well-known/agent-card.json"
                                       )["url"] == "http://localhost:8000/"
    card["supportedInterfaces"][0].update(url="0.0.0.0:50051", protocolBinding="GRPC")
    if a2a_client._grpc() is not None:
        assert a2a_client.choose_interface(card, "http://10.1.2.3:8000/x.json")["url"] == \
            "grpc://10.1.2.3:50051"


def test_error_table_in_both_directions():
    """Each of a2a_min's errors, sent by the server, comes back as its class."""
    classes = [c for c in vars(a2a_min).values()
               if isinstance(c, type) and issubclass(c, a2a_min.A2AError) and c is not
               a2a_min.A2AError]
    assert len(classes) >= 20
    for cls in classes:
        error = cls("m", metadata={"k": "v"})
        # ConflictError is UnsupportedOperationError on the wire (the same reason, code)
        parent = cls.__mro__[1]
        expected = parent if parent is not a2a_min.A2AError and cls.reason == parent.reason else cls
        body = a2a_min._jsonrpc_error(1, error)["error"]
        back = a2a_client.error_from(body["code"], body["message"], body["data"])
        assert type(back) is expected and back.message == "m" and back.metadata == {"k": "v"}
        status = a2a_min._status_error(error)
        back = a2a_client._status_error(status, error.http_status, None)
        assert type(back) is expected


# -- the command line ------------------------------------------------------------

def cli(*args, env=None, cwd=ROOT, script="a2a_min.py"):
    return subprocess.run([sys.executable, script, *args], cwd=cwd, capture_output=True,
                          text=True, timeout=60, env={**os.environ, **(env or {})})


@pytest.fixture
def live_agent():
    live = Live(agent_server(authenticate=a2a_min.BearerAuth({"s3cret": "alice"})))
    yield live
    live.close()


def test_cli_send_get_list_cancel_watch_and_push(live_agent):
    url, auth = live_agent.url, ["--auth", "Bearer s3cret"]
    done = cli("send", url, "hello", *auth)
    assert done.returncode == 0, done.stderr
    assert "COMPLETED" in done.stdout and "echo: hello" in done.stdout
    task_id = done.stdout.split()[1]
    shown = cli("get", url, task_id, "--json", *auth)
    assert json.loads(shown.stdout)["id"] == task_id
    streamed = cli("send", url, "chunks", "--stream", "--binding", "http+json", *auth)
    lines = streamed.stdout.splitlines()
    assert lines[0].startswith("[0] task ") and lines[-1].endswith("status COMPLETED")
    assert "".join(line.rsplit(": ", 1)[1] for line in lines if "artifact" in line
                   and not line.endswith(" (end)")) == \
        "one two three"
    slow = cli("send", url, "slow", "--immediate", "--json", *auth)
    slow_id = json.loads(slow.stdout)["task"]["id"]
    watcher = subprocess.Popen([sys.executable, "a2a_min.py", "watch", url, slow_id, *auth],
                               cwd=ROOT, stdout=subprocess.PIPE, text=True)
    time.sleep(1)
    assert "CANCELED" in cli("cancel", url, slow_id, *auth).stdout
    watched = watcher.communicate(timeout=30)[0]
    assert watched.splitlines()[-1].endswith("status CANCELED")
    listed = cli("list", url, "--page-size", "2", *auth)
    assert listed.stdout.count("\n") == 3 and "--page-token" in listed.stdout
    made = cli("push", "create", url, task_id, "https://hooks.invalid/x", "--id", "h1", *auth)
    assert "h1" in made.stdout, made.stderr
    assert "h1" in cli("push", "list", url, task_id, *auth).stdout
    assert "https://hooks.invalid/x" in cli("push", "get", url, task_id, "h1", *auth).stdout
    assert "deleted" in cli("push", "delete", url, task_id, "h1", *auth).stdout
    card = cli("card", url, "--extended", *auth)
    assert "Test agent" in card.stdout and "JSONRPC" in card.stdout


def test_cli_errors_are_one_clear_line_never_a_traceback(live_agent):
    for args, expected in [
            (("send", "http://127.0.0.1:1", "hi"), "nothing listens at"),
            (("get", live_agent.url, "nope"), "AuthenticationRequiredError"),
            (("get", live_agent.url, "nope", "--auth", "Bearer s3cret"), "TaskNotFoundError"),
            (("card", "http://127.0.0.1:1"), "connection refused")]:
        done = cli(*args)
        assert done.returncode == 1 and expected in done.stderr, done.stderr
        assert "Traceback" not in done.stderr and done.stderr.count("\n") <= 2


def test_curl_lines_run_as_printed_and_agree_with_the_client(live_agent):
    need("curl", "the --curl lines are run with curl (apt-get install curl)")
    url = live_agent.url
    task_id = json.loads(cli("send", url, "hello", "--json", "--auth", "Bearer s3cret"
                             ).stdout)["task"]["id"]
    for binding in ("jsonrpc", "http+json"):
        done = cli("get", url, task_id, "--json", "--curl", "--binding", binding,
                   env={"A2A_AUTH": "Bearer s3cret"})
        assert done.returncode == 0, done.stderr
        printed = done.stderr.strip().splitlines()
        assert printed[0] == f"curl -sS {url}/.well-known/agent-card.json"
        assert "s3cret" not in done.stderr and '"Authorization: $A2A_AUTH"' in printed[1]
        ran = subprocess.run(["bash", "-c", printed[1]], capture_output=True, text=True,
                             timeout=30, env={**os.environ, "A2A_AUTH": "Bearer s3cret"})
        answer = json.loads(ran.stdout)
        assert (answer["result"] if binding == "jsonrpc" else answer) == json.loads(done.stdout)
    shown = cli("get", url, task_id, "--curl", "--show-secrets", "--auth", "Bearer s3cret")
    assert "Authorization: Bearer s3cret" in shown.stderr
    streamed = cli("send", url, "chunks", "--stream", "--curl", "--auth", "Bearer s3cret")
    line = streamed.stderr.strip().splitlines()[-1]
    assert line.startswith("curl -sS -N ") and "text/event-stream" in line
    ran = subprocess.run(["bash", "-c", line], capture_output=True, text=True, timeout=30,
                         env={**os.environ, "A2A_AUTH": "Bearer s3cret"})
    # The line repeats the client's send, messageId and all: a repeat, answered as the first
    # was (docs/idempotency.md): one event, the task the stream made, as it ended.
    events = [json.loads(d) for d in re.findall(r"^data: (.*)$", ran.stdout, re.M)]
    first = streamed.stdout.splitlines()[0]
    assert len(events) == 1 and events[0]["result"]["task"]["id"] in first, (ran.stdout, first)
    assert events[0]["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


def test_serve_verb_and_no_verb_run_the_server():
    for argv in (["serve"], []):
        port = free_port()
        proc = run_host([sys.executable, "a2a_min.py", *argv, "--port", str(port)], port)
        try:
            done = cli("send", f"http://127.0.0.1:{port}", "hi")
            assert "You said: hi" in done.stdout
        finally:
            proc.terminate()
            proc.wait(10)


def test_a_missing_companion_is_named(tmp_path):
    shutil.copy(os.path.join(ROOT, "a2a_min.py"), tmp_path)
    done = subprocess.run([sys.executable, "-S", "a2a_min.py", "send", "http://127.0.0.1:1", "hi"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=30)
    assert done.returncode != 0 and "a2a_cli.py" in done.stderr
    assert "a2a_client.py" in done.stderr and "Traceback" not in done.stderr


def test_the_installed_console_command(live_agent):
    command = os.path.join(os.path.dirname(sys.executable), "a2a-min")
    need(command, "the console command a2a-min comes with pip install .")
    done = subprocess.run([command, "send", "--help"], capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 0 and "--stream" in done.stdout and "--curl" in done.stdout
    done = subprocess.run([command, "card", live_agent.url], capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 0 and done.stdout.startswith("Test agent")


def test_watching_a_task_that_waits_for_input_follows_it_until_it_ends():
    """SubscribeToTask begins with the task as it is; one waiting for input is
    followed on (into its next turn, or its cancel), not ended there."""
    live = Live(agent_server())
    try:
        with a2a_client.Client(live.url) as client:
            waiting = client.send("wait")["task"]
            follow = client.subscribe(waiting["id"])
            assert next(follow)["task"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
            threading.Timer(0.5, client.cancel_task, (waiting["id"],)).start()
            assert states(list(follow))[-1] == "TASK_STATE_CANCELED"
        watcher = subprocess.Popen([sys.executable, "a2a_min.py", "watch", live.url,
                                    client.send("wait")["task"]["id"]], cwd=ROOT,
                                   stdout=subprocess.PIPE, text=True)
        time.sleep(1.5)
        assert watcher.poll() is None                     # still following
        task_id = json.loads(cli("list", live.url, "--json").stdout)["tasks"][0]["id"]
        cli("cancel", live.url, task_id)
        lines = watcher.communicate(timeout=30)[0].splitlines()
        assert "INPUT_REQUIRED" in lines[0] and lines[-1].endswith("status CANCELED")
    finally:
        live.close()


def test_command_line_mistakes_are_named():
    for args, expected in [
            (("send", "http://127.0.0.1:1", "hi", "--timeout", "0"), "not a number of seconds"),
            (("send", "http://127.0.0.1:1", "hi", "--timeout", "-1"), "not a number of seconds"),
            (("sned", "http://127.0.0.1:1", "hi"), "unknown verb 'sned'; the verbs are serve")]:
        done = cli(*args)
        assert done.returncode == 2, done
        assert expected in done.stderr and "Traceback" not in done.stderr, done.stderr
    live = Live(agent_server())
    try:
        done = cli("card", live.url + "/a2a")
        assert done.returncode == 1
        assert f"no agent card at {live.url}/a2a/.well-known/agent-card.json (HTTP 404)" in \
            done.stderr, done.stderr
    finally:
        live.close()


# -- issue 33: a newcomer's trial of the command line ----------------------------------------

def ending_agent(ctx):
    """Ends each task as its text says."""
    states = {"fail": "TASK_STATE_FAILED", "reject": "TASK_STATE_REJECTED",
              "wait": "TASK_STATE_INPUT_REQUIRED", "auth": "TASK_STATE_AUTH_REQUIRED"}
    if ctx.text in states:
        yield a2a_min.status_update(states[ctx.text], f"ended: {ctx.text}")
    else:
        yield "done"


@pytest.mark.parametrize("stream", [False, True])
def test_send_exits_by_the_state_the_task_was_left_in(stream):
    live = Live(a2a_min.Server(ending_agent))
    try:
        codes = {text: cli("send", live.url, text, *(["--stream"] if stream else [])).returncode
                 for text in ("hello", "fail", "reject", "wait", "auth")}
        waiting = json.loads(cli("send", live.url, "wait", "--json").stdout)["task"]["id"]
        watcher = subprocess.Popen([sys.executable, "a2a_min.py", "watch", live.url, waiting],
                                   cwd=ROOT, stdout=subprocess.PIPE, text=True)
        assert "INPUT_REQUIRED" in watcher.stdout.readline()
        live.rpc("CancelTask", {"id": waiting})
        watched = watcher.wait(30)
    finally:
        live.close()
    assert codes == {"hello": 0, "fail": 1, "reject": 1, "wait": 3, "auth": 3}
    assert watched == 4
    helped = " ".join(cli("send", "--help").stdout.split())
    assert "3 (send, watch) the task waits for input" in helped and "4 (send, watch) the task " \
        "was CANCELED" in helped


def test_a_token_the_server_refuses_is_said_to_be_what_auth_gave(live_agent):
    """The server's hint is curl's (send -H ...): the command line names its own flag."""
    done = cli("get", live_agent.url, "nope", "--auth", "Bearer wrong")
    assert done.returncode == 1 and "invalid credentials" in done.stderr, done.stderr
    assert "refused the credentials --auth gave: check the token" in done.stderr, done.stderr
    assert "wrong" not in done.stderr


def test_auth_without_a_scheme_is_told_it_is_not_bearer(live_agent):
    done = cli("get", live_agent.url, "nope", "--auth", "s3cret")
    assert done.returncode == 1
    assert "the Authorization header is not 'Bearer <token>'" in done.stderr, done.stderr
    assert "missing credentials" not in done.stderr
    assert "--auth 'Bearer <token>'" in done.stderr and "s3cret" not in done.stderr
    server = a2a_min.Server(scenario_agent, authenticate=a2a_min.BearerAuth({"t": "alice"}))
    error = json.loads(server.handle_http("GET", "/tasks", "", {
        "a2a-version": "1.0", "authorization": "t"}, b"").body)["error"]
    assert error["message"].startswith("the Authorization header is not 'Bearer <token>'")


def test_options_before_the_verb_are_the_verbs():
    live = Live(a2a_min.demo_server())
    try:
        done = cli("--json", "send", live.url, "hi")
        direct = cli("--json", "--timeout", "5", "send", live.url, "hi", script="a2a_cli.py")
    finally:
        live.close()
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert direct.returncode == 0 and json.loads(direct.stdout)["task"], direct.stderr


def test_send_text_url_swapped_is_caught_before_any_lookup():
    done = cli("send", "hello there", "http://127.0.0.1:1")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "send takes the agent's URL first, then the text: send http://127.0.0.1:1 " \
        "'hello there'" in done.stderr
    assert "host" not in done.stderr and "unknown" not in done.stderr


def test_help_lists_every_verb_check_included():
    demo_help = cli("--help").stdout
    assert "{card,send,get,list,cancel,watch,push,check}" in demo_help, demo_help
    client_help = cli("check", "--help")
    assert client_help.returncode == 0


def test_card_shows_the_declared_extensions():
    server = a2a_min.Server(scenario_agent, extensions=[
        {"uri": "https://example.com/ext/trace/v1", "description": "traces each turn"}],
        required_extensions=["https://example.com/ext/must/v1"])
    live = Live(server)
    try:
        done = cli("card", live.url)
    finally:
        live.close()
    assert "  extension https://example.com/ext/must/v1 (required)" in done.stdout, done.stdout
    assert "  extension https://example.com/ext/trace/v1: traces each turn" in done.stdout


def test_binding_grpc_without_grpcio_says_grpcio_is_missing():
    card = {"name": "g", "supportedInterfaces": [
        {"url": "127.0.0.1:50051", "protocolBinding": "GRPC", "protocolVersion": "1.0"},
        {"url": "http://127.0.0.1:1/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}]}
    code = ("import sys; sys.modules['grpc'] = None; import a2a_client, json\n"
            f"try:\n    a2a_client.Client({card!r}, binding='GRPC')\n"
            "except a2a_client.ClientError as error:\n    print(error.message)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=30)
    assert "grpcio is not installed" in done.stdout, done
    assert "none is GRPC" not in done.stdout


def test_stream_of_exec_output_is_not_double_spaced():
    agent = a2a_cli.exec_agent(["sh", "-c", "printf 'one\\ntwo\\nthree\\n'"])
    live = Live(a2a_min.Server(agent))
    try:
        done = cli("send", live.url, "x", "--stream")
    finally:
        live.close()
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "" not in lines, done.stdout
    # (and, if the last line went out before the program ended, "artifact ID (end)")
    assert [line.split(": ", 1)[1] for line in lines if " artifact " in line
            and not line.endswith(" (end)")] == ["one", "two", "three"], done.stdout


def test_an_agent_returning_a_dict_is_told_about_data_part():
    from harness import Client
    for agent in (lambda text: {"answer": 42}, lambda text: {"a": 1, "b": 2}):
        error = Client(a2a_min.Server(agent)).error("SendMessage", {"message": {
            "messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]}})
        assert error["code"] == a2a_min.InvalidAgentResponseError.code
        assert "artifact_update([data_part(your_dict)])" in error["message"], error


def test_a_missing_cryptography_names_the_package_to_install():
    code = ("import sys; sys.modules['cryptography'] = None; import a2a_signing\n"
            "try:\n    a2a_signing._crypto()\n"
            "except a2a_signing.CardSignatureError as error:\n    print(error)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=30)
    assert "pip install cryptography" in done.stdout and "'.[signing]'" in done.stdout
    assert "a2a-min-server" not in done.stdout


@pytest.mark.parametrize("version", ["3.9", "3.8"])
def test_an_older_python_gets_one_line(version):
    import glob
    found = sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{version}.*/bin/python")))
    python = found[-1] if found else shutil.which(f"python{version}")
    if not python:
        pytest.skip(f"no Python {version} here")
    for args in (["a2a_min.py", "--help"], ["a2a_min.py", "send", "http://127.0.0.1:1", "x"],
                 ["a2a_cli.py", "card", "http://127.0.0.1:1"]):
        done = subprocess.run([python, *args], cwd=ROOT, capture_output=True, text=True,
                              timeout=30)
        assert done.returncode == 1 and done.stdout == "", done
        assert done.stderr.count("\n") == 1 and "needs Python 3.10 or newer" in done.stderr, \
            done.stderr
    imported = subprocess.run([python, "-c", "import a2a_min"], cwd=ROOT, capture_output=True,
                              text=True, timeout=30)
    assert imported.stderr.strip().splitlines()[-1].startswith(
        "ImportError: a2a_min needs Python 3.10 or newer")
