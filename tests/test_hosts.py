"""The WSGI and ASGI adapters: under wsgiref.validate in-process, and under real
gunicorn and uvicorn servers on 127.0.0.1."""

import http.client
import io
import json
import os
import shutil
import socket
import sys
import time
import wsgiref.util
import wsgiref.validate

import pytest

import a2a_min
from harness import (ROOT, exercise, free_port, parse_sse, rpc_body, run_host, scenario_agent,
                     user_message)

HEADERS = {"A2A-Version": "1.0", "Content-Type": "application/json"}


def wsgi_call(app, method, path, body=b"", query="", headers=None):
    environ = {"REQUEST_METHOD": method, "PATH_INFO": path, "QUERY_STRING": query, "SCRIPT_NAME": "",
               "wsgi.input": io.BytesIO(body), "CONTENT_LENGTH": str(len(body))}
    wsgiref.util.setup_testing_defaults(environ)
    for name, value in (headers or {}).items():
        key = name.upper().replace("-", "_")
        environ[key if key == "CONTENT_TYPE" else "HTTP_" + key] = value
    got = {}

    def start_response(status, response_headers, exc_info=None):
        got["status"], got["headers"] = status, dict(response_headers)
        return lambda data: None

    result = wsgiref.validate.validator(app)(environ, start_response)
    try:
        data = b"".join(result)
    finally:
        result.close()
    return int(got["status"].split()[0]), got["headers"], data


def test_wsgi_under_validator():
    app = a2a_min.wsgi_app(a2a_min.Server(scenario_agent))
    status, headers, data = wsgi_call(app, "GET", "/.well-known/agent-card.json")
    assert status == 200 and json.loads(data)["supportedInterfaces"][0]["url"] == \
        "http://127.0.0.1/"
    status, _, data = wsgi_call(app, "POST", "/", rpc_body(
        "SendMessage", {"message": user_message("hi")}), headers=HEADERS)
    task = json.loads(data)["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    status, headers, data = wsgi_call(app, "POST", "/message:stream", json.dumps(
        {"message": user_message("chunks")}).encode(), headers=HEADERS)
    events = parse_sse(data)
    assert headers["Content-Type"] == "text/event-stream"
    assert events[-1][1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    status, _, data = wsgi_call(app, "GET", f"/tasks/{task['id']}", headers=HEADERS)
    assert status == 200 and json.loads(data)["id"] == task["id"]
    status, _, data = wsgi_call(app, "GET", "/nope/nothing/here", headers=HEADERS)
    assert status == 404 and json.loads(data)["error"]["code"] == 404


def test_wsgi_mount_prefix_and_body_limit():
    app = a2a_min.wsgi_app(a2a_min.Server(scenario_agent, max_body_bytes=100))
    environ_prefix = {"SCRIPT_NAME": "/a2a"}
    environ = {"REQUEST_METHOD": "GET", "PATH_INFO": "/.well-known/agent-card.json",
               **environ_prefix}
    wsgiref.util.setup_testing_defaults(environ)
    got = {}
    body = b"".join(app(environ, lambda s, h, e=None: got.update(status=s)))
    assert json.loads(body)["supportedInterfaces"][0]["url"] == "http://127.0.0.1/a2a/"
    status, _, data = wsgi_call(app, "POST", "/", b"x" * 500, headers=HEADERS)
    assert status == 413


@pytest.mark.skipif(shutil.which("gunicorn") is None and not os.path.exists(
    os.path.join(os.path.dirname(sys.executable), "gunicorn")), reason="needs gunicorn (test extra)")
def test_under_gunicorn():
    port = free_port()
    gunicorn = os.path.join(os.path.dirname(sys.executable), "gunicorn")
    proc = run_host([gunicorn if os.path.exists(gunicorn) else "gunicorn", "-k", "gthread",
                     "--threads", "8", "-b", f"127.0.0.1:{port}", "examples.wsgi_app:app"], port)
    try:
        exercise(port)
    finally:
        proc.terminate()
        proc.wait(10)


def test_under_uvicorn():
    pytest.importorskip("uvicorn", reason="needs uvicorn (test extra)")
    port = free_port()
    proc = run_host([sys.executable, "-m", "uvicorn", "examples.asgi_app:app",
                     "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"], port)
    try:
        exercise(port)
    finally:
        proc.terminate()
        proc.wait(10)


def asgi_call(app, scope):
    import asyncio
    sent = []

    async def receive():
        if "_received" in scope:                   # like a server: the next message is
            await asyncio.Future()                 # the disconnect, when the client leaves
        scope["_received"] = True
        return {"type": "http.request", "body": scope.pop("_body", b""), "more_body": False}

    async def send(message):
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    return sent


def test_asgi_mounted_under_a_prefix_and_lifespan():
    import asyncio
    app = a2a_min.asgi_app(a2a_min.Server(scenario_agent))
    scope = {"type": "http", "method": "GET", "root_path": "/a2a",
             "path": "/a2a/.well-known/agent-card.json",
             "raw_path": b"/a2a/.well-known/agent-card.json", "query_string": b"",
             "headers": [(b"host", b"example.test:8080")], "scheme": "https"}
    sent = asgi_call(app, scope)
    assert sent[0]["status"] == 200
    card = json.loads(sent[1]["body"])
    assert card["supportedInterfaces"][0]["url"] == "https://example.test:8080/a2a/"
    body = json.dumps({"message": user_message("chunks")}).encode()
    sent = asgi_call(app, {"type": "http", "method": "POST", "root_path": "/a2a",
                           "path": "/a2a/message:stream", "raw_path": b"/a2a/message:stream",
                           "query_string": b"", "_body": body,
                           "headers": [(b"a2a-version", b"1.0"),
                                       (b"content-type", b"application/json")]})
    chunks = [m for m in sent if m["type"] == "http.response.body"]
    assert all(m.get("more_body") for m in chunks[:-1]) and not chunks[-1].get("more_body")
    events = parse_sse(b"".join(m["body"] for m in chunks))
    assert events[-1][1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    messages = iter([{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}])
    replies = []

    async def receive():
        return next(messages)

    async def send(message):
        replies.append(message["type"])

    asyncio.run(app({"type": "lifespan"}, receive, send))
    assert replies == ["lifespan.startup.complete", "lifespan.shutdown.complete"]


def test_single_path_mode():
    """Everything on one path (AWS Bedrock AgentCore routes only POST /invocations)."""
    server = a2a_min.Server(scenario_agent, single_path="/invocations")
    card = json.loads(server.handle_http("GET", "/invocations", "", {}, b"",
                                         base_url="http://h:1").body)
    assert card["supportedInterfaces"] == [{"url": "http://h:1/invocations",
                                            "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}]
    assert server.handle_http("GET", "/invocations/.well-known/agent-card.json").status == 200
    resp = server.handle_http("POST", "/invocations", "", {"a2a-version": "1.0"}, rpc_body(
        "SendMessage", {"message": user_message("hi")}))
    assert json.loads(resp.body)["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    for path in ("/", "/message:send", "/.well-known/agent-card.json"):
        resp = server.handle_http("GET", path, "", {"a2a-version": "1.0"}, b"")
        assert resp.status == 404 and "/invocations" in json.loads(resp.body)["error"]["message"]


def test_lambda_behind_the_local_runner():
    port = free_port()
    proc = run_host([sys.executable, "examples/lambda_local.py", str(port)], port)
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/.well-known/agent-card.json")
        card = json.loads(conn.getresponse().read())
        assert card["supportedInterfaces"][0]["url"] == f"http://127.0.0.1:{port}/"
        exercise(port)
    finally:
        proc.terminate()
        proc.wait(10)


def test_core_sections_import_no_host_module():
    """Sections 1-8 of a2a_min.py (the protocol) never import a host's module;
    only section 9 (adapters) and the demo do."""
    text = open(os.path.join(ROOT, "a2a_min.py"), encoding="utf-8").read()
    core = text.split("# 9. Adapters")[0]
    for module in ("socketserver", "http.server", "wsgiref", "grpc", "asyncio.start_server"):
        assert f"import {module}" not in core and f"from {module}" not in core, module


# -- the asyncio server ------------------------------------------------------------------

def test_later_settles_once_maps_and_awaits():
    import asyncio
    later, seen = a2a_min._Later(), []
    doubled = later.map(lambda got: got.result() * 2)
    later.then(lambda got: seen.append(got.result()))
    later.settle(21)
    later.settle(99)                                                    # once only
    assert seen == [21] and doubled.done and doubled.result() == 42
    failed = a2a_min._Later()
    failed.settle(error=a2a_min.TaskNotFoundError("gone"))
    with pytest.raises(a2a_min.TaskNotFoundError):
        failed.result()

    async def wait_for_it():
        pending = a2a_min._Later()
        asyncio.get_running_loop().call_later(0.01, pending.settle, "done")
        return await pending
    assert asyncio.run(wait_for_it()) == "done"


@pytest.fixture
def asyncio_port():
    """The demo on the asyncio server, with a 2 s idle and head timeout."""
    from harness import AsyncioHostClient

    class ShortTimeout(AsyncioHostClient):
        timeout = 2.0

    host = ShortTimeout(a2a_min.demo_server())
    yield host.port
    host.close()


def test_asyncio_server(asyncio_port):
    exercise(asyncio_port)


def test_asyncio_pipelining_and_bad_input(asyncio_port):
    body = rpc_body("GetTask", {"id": "x"})
    one = (b"POST / HTTP/1.1\r\nHost: x\r\nA2A-Version: 1.0\r\nContent-Type: application/json\r\n"
           b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    with socket.create_connection(("127.0.0.1", asyncio_port), timeout=5) as sock:
        sock.sendall(one + one)                                  # two requests at once
        data = b""
        while data.count(b'"code":-32001') < 2:
            data += sock.recv(65536)
    assert data.count(b"HTTP/1.1 200") == 2
    with socket.create_connection(("127.0.0.1", asyncio_port), timeout=5) as sock:
        sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 50000000\r\n\r\n")
        assert sock.recv(65536).startswith(b"HTTP/1.1 413")
    with socket.create_connection(("127.0.0.1", asyncio_port), timeout=5) as sock:
        sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n{}")
        assert sock.recv(65536).startswith(b"HTTP/1.1 408")     # after the 2 s timeout
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", asyncio_port), timeout=5) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\n")
        try:
            for _ in range(10):                                  # a header line every 0.5 s
                sock.sendall(b"X: 1\r\n")
                time.sleep(0.5)
        except OSError:
            pass
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
        assert data.startswith(b"HTTP/1.1 408") and time.monotonic() - started < 4.5
    exercise(asyncio_port)                                       # still serving


def test_asyncio_holds_1000_idle_keep_alive_connections(asyncio_port):
    """1,000 keep-alive connections, each after one request, sit idle: others are still
    served, no thread per connection is spent, and the idle ones are closed cleanly at
    the server's timeout (2 s here)."""
    import threading
    request = (b"GET /.well-known/agent-card.json HTTP/1.1\r\nHost: x\r\n\r\n")
    threads_before = threading.active_count()
    socks = []
    try:
        for _ in range(1000):
            sock = socket.create_connection(("127.0.0.1", asyncio_port), timeout=10)
            sock.sendall(request)
            socks.append(sock)
        for sock in socks:
            data = b""
            while b"\r\n\r\n" not in data:
                data += sock.recv(65536)
            assert data.startswith(b"HTTP/1.1 200")
        assert threading.active_count() - threads_before < 100       # not one per connection
        exercise(asyncio_port)                                       # others are served
        time.sleep(2.5)                                              # past the idle timeout
        closed = 0
        for sock in socks:
            sock.settimeout(5)
            try:
                while sock.recv(65536):
                    pass
                closed += 1
            except OSError:
                closed += 1
        assert closed == 1000
    finally:
        for sock in socks:
            sock.close()
    exercise(asyncio_port)


# -- agents on an event loop ---------------------------------------------------------


async def async_agent(ctx):
    """An async agent: awaits, checks it runs in a task, uses asyncio.timeout."""
    import asyncio
    assert asyncio.current_task() is not None
    if ctx.text.startswith("sleep"):
        await asyncio.sleep(float(ctx.text[5:]))
        return "slept"
    if ctx.text == "timeout" and sys.version_info >= (3, 11):
        try:
            async with asyncio.timeout(0.05):
                await asyncio.sleep(5)
        except TimeoutError:
            return "timed out, as asked"
    return "async: " + ctx.text


def blocking_agent(ctx):
    """A sync agent that blocks its thread (as a sync HTTP call would)."""
    time.sleep(float(ctx.text))
    return "blocked " + ctx.text


@pytest.mark.parametrize("host_class", ["AsyncioHostClient", "AsgiHostClient"])
def test_async_agent_on_the_event_loop(host_class):
    import harness
    client = getattr(harness, host_class)(a2a_min.Server(async_agent, blocking_timeout=0.3))
    try:
        task = client.result("SendMessage", {"message": user_message("hi")})["task"]
        assert task["artifacts"][0]["parts"][0]["text"] == "async: hi"
        if sys.version_info >= (3, 11):
            task = client.result("SendMessage", {"message": user_message("timeout")})["task"]
            assert task["artifacts"][0]["parts"][0]["text"] == "timed out, as asked"
        # Past the blocking deadline: the task as it is, and the turn goes on.
        task = client.result("SendMessage", {"message": user_message("sleep1")})["task"]
        assert task["status"]["state"] in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")
        deadline = time.monotonic() + 5
        while task["status"]["state"] != "TASK_STATE_COMPLETED" and time.monotonic() < deadline:
            time.sleep(0.1)
            task = client.result("GetTask", {"id": task["id"]})
        assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    finally:
        client.close()


def test_sync_agent_never_blocks_the_event_loop():
    from harness import AsyncioHostClient
    import threading
    client = AsyncioHostClient(a2a_min.Server(blocking_agent))
    try:
        slow = threading.Thread(target=client.result, args=(
            "SendMessage", {"message": user_message("1.5")}))
        slow.start()
        time.sleep(0.2)                            # the agent is now blocking its thread
        started = time.monotonic()
        conn = http.client.HTTPConnection("127.0.0.1", client.port, timeout=5)
        conn.request("GET", "/.well-known/agent-card.json")
        assert conn.getresponse().status == 200
        assert time.monotonic() - started < 0.5    # answered while the agent blocks
        slow.join(5)
    finally:
        client.close()


# -- a turn that ends at once ----------------------------------------------------------
#
# A new task whose agent returns its answer in the same step is stored once, in
# its final form (no stream or webhook could have seen the steps between). These
# tests hold that shortcut to what the general path (events, one snapshot per
# step) leaves behind, on every way of running an agent.


def _shape(task):
    """A task with its server-made ids and timestamps blanked, for comparison."""
    text = json.dumps(task, sort_keys=True)
    for key in ("id", "contextId", "taskId", "artifactId", "timestamp"):
        for value in {m for m in _values(task, key)}:
            text = text.replace(json.dumps(value), '"<' + key + '>"')
    return json.loads(text)


def _values(node, key):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == key and isinstance(v, str):
                yield v
            yield from _values(v, key)
    elif isinstance(node, list):
        for v in node:
            yield from _values(v, key)


async def async_echo(ctx):
    return "echo: " + ctx.text


def sync_echo(ctx):
    return "echo: " + ctx.text


def _stored_both_ways(client):
    """(task stored after SendMessage, after SendStreamingMessage) for one text."""
    quick = client.result("SendMessage", {"message": user_message("hi", messageId="m-1")})["task"]
    events = client.stream("SendStreamingMessage", {"message": user_message("hi", messageId="m-1")})
    streamed_id = events[0][1]["result"]["task"]["id"]
    return (client.result("GetTask", {"id": quick["id"]}),
            client.result("GetTask", {"id": streamed_id}), quick)


@pytest.mark.parametrize("agent", [async_echo, sync_echo])
@pytest.mark.parametrize("host_class", ["Client", "AsyncioHostClient", "AsgiHostClient"])
def test_a_turn_that_ends_at_once_is_stored_as_the_general_path_stores_it(agent, host_class):
    import harness
    for push in (False, True):                 # push on: every turn takes the general path
        server = a2a_min.Server(agent, push_notifications=push)
        client = getattr(harness, host_class)(server)
        try:
            quick, general, answered = _stored_both_ways(client)
            assert quick["status"]["state"] == "TASK_STATE_COMPLETED"
            assert quick["artifacts"][0]["parts"] == [{"text": "echo: hi"}]
            assert _shape(quick) == _shape(general)
            assert answered == quick               # SendMessage answered the stored task
            assert quick["history"][0]["taskId"] == quick["id"]
        finally:
            if hasattr(client, "close"):
                client.close()


def test_an_eager_turn_is_answered_without_a_later():
    """Python 3.12+ starts an async agent's task eagerly: a quick turn has ended
    before handle_http returns, so the Response is whole. Before 3.12 it is a
    Later, settled on the loop's next turn."""
    import asyncio
    server = a2a_min.Server(async_echo)
    body = rpc_body("SendMessage", {"message": user_message("now")})

    async def send():
        response = server.handle_http("POST", "/", "", {"a2a-version": "1.0"}, body, None,
                                      asyncio.get_running_loop())
        if sys.version_info >= (3, 12):
            assert response.later is None
        else:
            assert response.later is not None and not response.later.done
            response = await response.later
        return json.loads(response.body)["result"]["task"]

    task = asyncio.run(send())
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["artifacts"][0]["parts"] == [{"text": "echo: now"}]


def test_date_header_and_ids_are_well_formed():
    import email.utils
    import uuid
    date = a2a_min._DateHeader()
    for _ in range(3):                         # (a second may turn between the two)
        if date() == email.utils.formatdate(usegmt=True):
            break
    else:
        raise AssertionError(f"Date {date()!r} is not {email.utils.formatdate(usegmt=True)!r}")
    assert date() is date()                    # remade once a second, not per response
    server_ids = a2a_min._Ids()                # a server's: 64 to one read of os.urandom
    for new_id in (a2a_min._new_id, server_ids):
        made = [new_id() for _ in range(2000)]
        assert len(set(made)) == 2000
        for one in made:
            parsed = uuid.UUID(one)
            assert str(parsed) == one and parsed.version == 4 and parsed.variant == uuid.RFC_4122
    import re
    import threading
    shared, got = a2a_min._Ids(), []           # threads drawing from one pool: no id twice
    threads = [threading.Thread(target=lambda: got.extend(shared() for _ in range(3000)))
               for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(got) == len(set(got)) == 12000
    clock = a2a_min._Clock()
    for now in (a2a_min._Clock(), clock, clock):
        stamp = now()
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", stamp), stamp
        assert abs(a2a_min._parse_timestamp(stamp)[0] - time.time()) < 2
    earlier = clock()
    time.sleep(0.002)
    assert clock() > earlier                   # milliseconds move on within the second


# -- no garbage cycles -------------------------------------------------------------------
#
# Everything a request makes is freed by reference counting the moment the
# answer is written: a reference cycle left behind (a closure holding the
# object that holds it) waits for the cyclic garbage collector, which then
# runs far more often and walks far more objects under load.


def _generator_echo(ctx):
    yield "echo: "
    yield ctx.text


async def _async_generator_echo(ctx):
    yield "echo: "
    yield ctx.text


def _cyclic_garbage(run):
    """The objects of a2a_min that ``run()`` left in reference cycles."""
    import gc
    enabled = gc.isenabled()
    gc.disable()
    try:
        gc.collect()
        gc.set_debug(gc.DEBUG_SAVEALL)
        run()
        gc.collect()
        ours = [o for o in gc.garbage if type(o).__module__ == "a2a_min"
                or getattr(o, "__module__", None) == "a2a_min"]
        return sorted({getattr(o, "__qualname__", type(o).__qualname__) for o in ours})
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if enabled:
            gc.enable()


@pytest.mark.parametrize("agent", [sync_echo, _generator_echo, async_echo, _async_generator_echo])
@pytest.mark.parametrize("host_class", ["Client", "ThreadsHostClient", "AsyncioHostClient"])
def test_requests_leave_no_reference_cycles(agent, host_class):
    import harness
    client = getattr(harness, host_class)(a2a_min.Server(agent))

    def requests():
        for _ in range(5):
            task = client.result("SendMessage", {"message": user_message("hi")})["task"]
            assert task["status"]["state"] == "TASK_STATE_COMPLETED"
            client.result("GetTask", {"id": task["id"]})
            client.error("GetTask", {"id": "no-such-task"})
            events = client.stream("SendStreamingMessage", {"message": user_message("hi")})
            assert events[-1][1]["result"]["statusUpdate"]["status"]["state"] == \
                "TASK_STATE_COMPLETED"

    try:
        requests()                                 # first use: pools, loops, caches
        assert _cyclic_garbage(requests) == []
    finally:
        if hasattr(client, "close"):
            client.close()
