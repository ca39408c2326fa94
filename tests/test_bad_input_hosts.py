"""Bad input against every host, over real sockets: slow headers, a body shorter
than its Content-Length, a chunked body, a pipelined second request, a client
that vanishes mid-stream. Each gets a clear error or a clean close; no task,
thread or file descriptor is left behind, and the server keeps serving.

Hosts: our threaded server and asyncio server, the WSGI app under gunicorn, the
ASGI app under uvicorn, and the Lambda handler behind the local runner (its
streams are buffered, so it has no mid-stream to vanish from)."""

import json
import os
import socket
import sys
import time

import pytest

import a2a_min
from harness import ROOT, exchange, free_port, need, parse_sse, run_host, usage

STDLIB_HOST = ("import sys; sys.path.insert(0, {root!r}); import a2a_min\n"
               "server = a2a_min.demo_server()\n")
HOSTS = {
    "via_threads": lambda port: [sys.executable, "-c", STDLIB_HOST.format(root=ROOT) + (
        f"a2a_min.make_http_server(server, '127.0.0.1', {port}, timeout=2).serve_forever()")],
    "via_asyncio": lambda port: [sys.executable, "-c", STDLIB_HOST.format(root=ROOT) + (
        "import asyncio\n"
        f"asyncio.run(a2a_min.serve_asyncio(server, '127.0.0.1', {port}, timeout=2))")],
    "via_gunicorn": lambda port: [
        os.path.join(os.path.dirname(sys.executable), "gunicorn"), "-k", "gthread",
        "--threads", "8", "--keep-alive", "2", "-b", f"127.0.0.1:{port}", "examples.wsgi_app:app"],
    "via_uvicorn": lambda port: [
        sys.executable, "-m", "uvicorn", "examples.asgi_app:app", "--host", "127.0.0.1",
        "--port", str(port), "--timeout-keep-alive", "2", "--log-level", "warning"],
    "via_lambda": lambda port: [sys.executable, "examples/lambda_local.py", str(port)],
}
HEADERS = b"Host: 127.0.0.1\r\nA2A-Version: 1.0\r\nContent-Type: application/json\r\n"


@pytest.fixture(params=sorted(HOSTS))
def host(request):
    if request.param == "via_gunicorn":
        need(HOSTS["via_gunicorn"](0)[0], "needs gunicorn (test extra)")
    if request.param == "via_uvicorn":
        need("uvicorn", "needs uvicorn (test extra)")
    port = free_port()
    proc = run_host(HOSTS[request.param](port), port)
    try:
        yield request.param, port, proc.pid
    finally:
        proc.terminate()
        proc.wait(10)


def post(path, body, extra=b""):
    return (b"POST %s HTTP/1.1\r\n%s%sContent-Length: %d\r\n\r\n%s"
            % (path.encode(), HEADERS, extra, len(body), body))


def rpc(method, params):
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()


def message(text, **fields):
    return {"message": {"messageId": f"m-{time.monotonic_ns()}", "role": "ROLE_USER",
                        "parts": [{"text": text}], **fields}}


def card_served(port, within=2.0):
    started = time.monotonic()
    got = exchange(port, b"GET /.well-known/agent-card.json HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                   b"Connection: close\r\n\r\n", until=b"}", timeout=within + 3)
    return got.startswith(b"HTTP/1.1 200") and time.monotonic() - started < within


def body_of(response):
    head, _, body = response.partition(b"\r\n\r\n")
    if b"transfer-encoding: chunked" in head.lower():    # uvicorn's way with a body
        body = dechunk_response(body)
    return json.loads(body)


def dechunk_response(data):
    """The body of a chunked response (what uvicorn sends)."""
    body = b""
    while True:
        size_line, _, data = data.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            return body
        body, data = body + data[:size], data[size + 2:]


def test_bad_input_on_every_host(host):
    name, port, pid = host
    assert card_served(port)
    before = usage(pid)

    # A pipelined second request: both answered, in order.
    one = post("/", rpc("GetTask", {"id": "nope-1"}))
    two = post("/", rpc("GetTask", {"id": "nope-2"}))
    got = exchange(port, one + two, until=b"nope-2")
    assert got.count(b"HTTP/1.1 200") == 2 and got.index(b"nope-1") < got.index(b"nope-2")

    # A chunked body is read whole.
    body = json.dumps(message("chunked")).encode()
    half = len(body) // 2
    chunked = (b"POST /message:send HTTP/1.1\r\n%sTransfer-Encoding: chunked\r\n"
               b"Connection: close\r\n\r\n%x\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n"
               % (HEADERS, half, body[:half], len(body) - half, body[half:]))
    got = exchange(port, chunked, until=b"TASK_STATE_COMPLETED")
    assert got.startswith(b"HTTP/1.1 200") and b"{\"text\":\"chunked\"}" in got

    # A body shorter than its Content-Length, then the client stops sending:
    # an error that says so, or a clean close.
    short = b"POST / HTTP/1.1\r\n%sContent-Length: 500\r\n\r\n{\"jsonrpc\"" % HEADERS
    got = exchange(port, short, shut=True, timeout=8)
    assert got == b"" or got.startswith((b"HTTP/1.1 400", b"HTTP/1.1 408")) or (
        got.startswith(b"HTTP/1.1 200") and body_of(got)["error"]["code"] == -32700)

    # Slow headers: a client sending a header line now and then holds nobody up.
    slow = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        slow.sendall(b"GET /.well-known/agent-card.json HTTP/1.1\r\n")
        for i in range(6):
            slow.sendall(b"X-Slow-%d: 1\r\n" % i)
            time.sleep(0.3)
            assert card_served(port, within=1.5)
    except OSError:
        pass                                   # the host cut the slow client off: fine
    finally:
        slow.close()

    # A client that vanishes mid-stream: the task goes on, and finishes.
    got = exchange(port, post("/", rpc("SendMessage", message("wait for it"))),
                   until=b"TASK_STATE_INPUT_REQUIRED")
    task = body_of(got)["result"]["task"]
    if name != "via_lambda":                   # Lambda buffers streams: nothing to vanish from
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        sock.sendall(b"POST /tasks/%s:subscribe HTTP/1.1\r\n%sAccept: text/event-stream\r\n"
                     b"Content-Length: 0\r\n\r\n" % (task["id"].encode(), HEADERS))
        seen = b""
        while b"\n\n" not in seen.split(b"\r\n\r\n", 1)[-1]:
            seen += sock.recv(65536)
        assert seen.startswith(b"HTTP/1.1 200") and b"TASK_STATE_INPUT_REQUIRED" in seen
        sock.close()                           # gone, mid-stream
    got = exchange(port, post("/", rpc("SendMessage", message(
        "now", taskId=task["id"]))), until=b"TASK_STATE_COMPLETED")
    assert b"TASK_STATE_COMPLETED" in got
    got = exchange(port, post("/", rpc("GetTask", {"id": task["id"]})), until=b"}}")
    assert body_of(got)["result"]["status"]["state"] == "TASK_STATE_COMPLETED"

    # Nothing left behind: connections (and, for our own servers, threads) come
    # back to where they were once the hosts' keep-alive timeouts pass. Threads
    # that run sync agents are pooled and kept for the next turn (max_workers):
    # the three turns above may have made up to three, when one turn's answer
    # came before its worker was idle again; a thread per connection would be
    # a dozen more (the slow client alone opened seven).
    deadline = time.monotonic() + 15
    while True:
        fds, threads = usage(pid)
        fds_ok = fds <= before[0]
        threads_ok = threads <= before[1] + 3 or name in ("via_gunicorn", "via_uvicorn")
        if fds_ok and threads_ok or time.monotonic() > deadline:
            break
        time.sleep(0.25)
    assert fds_ok, f"{name}: {fds} connections open, {before[0]} before"
    assert threads_ok, f"{name}: {threads} threads, {before[1]} before"
    assert card_served(port)
