"""The asyncio server (serve_asyncio) on 127.0.0.1: pipelining, timeouts, bad
input, 1,000 idle keep-alive connections, and a client that does not read its
answers; agents on an event loop (async agents on it, sync ones off it, under
our asyncio server and under uvicorn); a turn that ends at once, stored as the
general path stores it; and requests that leave no reference cycles, in-process
and on our threaded and asyncio servers."""

import functools
import http.client
import json
import socket
import sys
import time

import pytest

import a2a_min
from harness import V1 as V1_HEADERS, Client, exercise, rpc_body, user_message


# -- the asyncio server ------------------------------------------------------------------

def test_a_pending_answer_settles_once_and_tells_every_callback():
    """The core's pending answer (SendMessage on an event-loop host, while its
    turn runs): settled once, by the turn's end or by expire() at the
    deadline; callbacks added before or after are called once, with their
    arguments; result() gives the answer or raises its error."""
    server = a2a_min.Server(lambda text: "echo: " + text)
    ctx, channel, _ = a2a_min._start_turn(server, {"message": user_message("hi")},
                                           a2a_min.CallContext())
    turn = a2a_min._TurnWriter(server.live, ctx, channel)
    pending = a2a_min._PendingAnswer(functools.partial(
        a2a_min._turn_result, server, turn, None, ctx.caller), turn, time.monotonic() + 60)
    seen = []
    pending.add_done_callback(lambda got, tag: seen.append((tag, got.result())), "before")
    assert not pending.done() and seen == []
    server.live.drive(turn)                                 # the turn ends: the answer settles
    assert pending.done() and len(seen) == 1 and seen[0][0] == "before"
    assert seen[0][1]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    pending.expire()                                    # once only
    pending.add_done_callback(lambda got: seen.append(("after", got.result())))
    assert [tag for tag, _ in seen] == ["before", "after"]

    def refuse(text):
        raise a2a_min.UnsupportedOperationError("not today")
    server = a2a_min.Server(refuse)
    ctx, channel, _ = a2a_min._start_turn(server, {"message": user_message("hi")},
                                           a2a_min.CallContext())
    turn = a2a_min._TurnWriter(server.live, ctx, channel)
    pending = a2a_min._PendingAnswer(functools.partial(
        a2a_min._turn_result, server, turn, None, ctx.caller), turn, time.monotonic() + 60)
    server.live.drive(turn)
    with pytest.raises(a2a_min.UnsupportedOperationError):
        pending.result()


def test_a_pending_answer_is_answered_at_its_deadline_on_the_loop():
    """_LoopAnswer holds a turn that outlives blocking_timeout to its deadline:
    the client gets the task as it is (WORKING), on the loop's thread."""
    import asyncio
    import threading
    release = threading.Event()

    def slow(ctx):
        yield a2a_min.status_update("TASK_STATE_WORKING")
        release.wait(10)
        yield "done"
    server = a2a_min.Server(slow, blocking_timeout=0.2)
    body = rpc_body("SendMessage", {"message": user_message("slow")})

    async def send():
        spawn = a2a_min._Spawner(asyncio.get_running_loop())
        response = server.handle_http("POST", "/", "", V1_HEADERS, body, None,
                                      None, spawn)
        assert response.pending is not None and not response.pending.done()
        started = time.monotonic()
        response = await a2a_min._answer_async(response)
        return time.monotonic() - started, json.loads(response.body)["result"]["task"]

    waited, task = asyncio.run(send())
    release.set()
    assert 0.1 < waited < 5
    assert task["status"]["state"] in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")


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
    one = (b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nA2A-Version: 1.0\r\nContent-Type: application/json\r\n"
           b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    with socket.create_connection(("127.0.0.1", asyncio_port), timeout=5) as sock:
        sock.sendall(one + one)                                  # two requests at once
        data = b""
        while data.count(b'"code":-32001') < 2:
            data += sock.recv(65536)
    assert data.count(b"HTTP/1.1 200") == 2
    with socket.create_connection(("127.0.0.1", asyncio_port), timeout=5) as sock:
        sock.sendall(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 50000000\r\n\r\n")
        assert sock.recv(65536).startswith(b"HTTP/1.1 413")
    with socket.create_connection(("127.0.0.1", asyncio_port), timeout=5) as sock:
        sock.sendall(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 10\r\n\r\n{}")
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
    request = (b"GET /.well-known/agent-card.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
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


def test_asyncio_stops_reading_pipelined_requests_while_the_client_does_not_read():
    import socket
    from harness import AsyncioHostClient
    server = a2a_min.Server(lambda text: "ok")
    client = Client(server)
    for _ in range(10):
        client.send("x " * 200_000)                       # one page is ~4 MB
    host = AsyncioHostClient(server)
    try:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(("127.0.0.1", host.port))
        request = (b"GET /tasks?pageSize=100&includeArtifacts=true HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                   b"A2A-Version: 1.0\r\n\r\n")
        sock.setblocking(False)
        for _ in range(300):
            try:
                sock.send(request)
            except BlockingIOError:
                break
        time.sleep(1.5)
        with open("/proc/self/status") as f:
            rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) >> 10
        assert rss < 600, f"{rss} MiB: answers piled up"  # ~1 GB when every one was answered
        sock.close()
    finally:
        host.close()


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


def test_an_eager_turn_is_answered_without_a_pending_answer():
    """Python 3.12+ starts an async agent's task eagerly: a quick turn has ended
    before handle_http returns, so the Response is whole. Before 3.12 it is
    pending, settled on the loop's next turn."""
    import asyncio
    server = a2a_min.Server(async_echo)
    body = rpc_body("SendMessage", {"message": user_message("now")})

    async def send():
        spawn = a2a_min._Spawner(asyncio.get_running_loop())
        response = server.handle_http("POST", "/", "", V1_HEADERS, body, None,
                                      None, spawn)
        if sys.version_info >= (3, 12):
            assert response.pending is None
        else:
            assert response.pending is not None and not response.pending.done()
            response = await a2a_min._answer_async(response)
        return json.loads(response.body)["result"]["task"]

    task = asyncio.run(send())
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["artifacts"][0]["parts"] == [{"text": "echo: now"}]


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
    time.sleep(0.2)             # (what earlier tests' threads let go of, let go of before)
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
