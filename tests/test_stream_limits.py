"""What a stream may hold, on both bundled servers, over real sockets: a
subscriber that reads nothing is dropped after the host's ``timeout``; one
caller opens at most ``max_caller_streams`` streams, and a threaded stream
frees its slot as soon as its client closes; HEAD opens no stream anywhere;
the asyncio server's connection cap stays below its descriptor limit."""

import asyncio
import contextlib
import http.client
import json
import socket
import subprocess
import sys
import threading
import time

import pytest

from harness import ROOT, suite_pki

import a2a_min

HOSTS = ("threads", "asyncio")


@contextlib.contextmanager
def serving(kind, server, **options):
    """``server`` on 127.0.0.1 behind the threaded or the asyncio server: its port."""
    if kind == "threads":
        httpd = a2a_min.make_http_server(server, "127.0.0.1", 0, **options)
        thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
        thread.start()
        try:
            yield httpd.server_address[1]
        finally:
            httpd.shutdown()
            httpd.drain(0)
        return
    ready, box = threading.Event(), {}

    def run():
        loop = box["loop"] = asyncio.new_event_loop()
        box["task"] = loop.create_task(a2a_min.serve_asyncio(
            server, "127.0.0.1", 0, grace=0, **options,
            on_ready=lambda listener: (box.update(port=listener.sockets[0].getsockname()[1]),
                                       ready.set())))
        with contextlib.suppress(BaseException):
            loop.run_until_complete(box["task"])
        loop.run_until_complete(asyncio.sleep(0.05))
        loop.close()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert ready.wait(10)
    try:
        yield box["port"]
    finally:
        box["loop"].call_soon_threadsafe(box["task"].cancel)
        thread.join(5)


def request(method, params, rid=1):
    body = json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode()
    return (b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nA2A-Version: 1.0\r\n"
            b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))


def rpc(port, method, params):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("POST", "/", json.dumps({"jsonrpc": "2.0", "id": 1, "method": method,
                                          "params": params}),
                 {"A2A-Version": "1.0", "Content-Type": "application/json"})
    answer = json.loads(conn.getresponse().read())
    conn.close()
    return answer


def waiting_task(port):
    """A task whose agent has said all it will and waits (for its gate): its id."""
    task = rpc(port, "SendMessage", {
        "message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "wait"}]},
        "configuration": {"returnImmediately": True}})["result"]["task"]

    def waits():
        found = rpc(port, "GetTask", {"id": task["id"], "historyLength": 0})["result"]
        return found["status"]["state"] == "TASK_STATE_WORKING" and found.get("artifacts")
    until(waits, "the agent has said all it will")
    return task["id"]


def until(condition, what, timeout=20):
    """Wait for ``condition()`` (a hang guard, not a timing assertion)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def gated_agent(gate, big=0):
    def agent(ctx):
        yield a2a_min.artifact_update("x" * max(big, 1))
        yield a2a_min.status_update("TASK_STATE_WORKING")
        gate.wait(30)
        yield "done"
    return agent


@pytest.mark.parametrize("kind", HOSTS)
def test_a_subscriber_that_reads_nothing_is_dropped_after_the_timeout(kind):
    # A 4 MiB task, and subscribers that never read: each stream's writes
    # stall at once. Past the host's timeout the server closes them (before,
    # the asyncio server waited for the reader for ever).
    gate = threading.Event()
    server = a2a_min.Server(gated_agent(gate, big=4 << 20), keepalive_interval=60,
                            max_store_bytes=64 << 20, max_bytes_per_caller=64 << 20)
    socks = []
    try:
        with serving(kind, server, timeout=1.0) as port:
            task_id = waiting_task(port)
            for _ in range(3):
                sock = socket.socket()
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                sock.connect(("127.0.0.1", port))
                sock.sendall(request("SubscribeToTask", {"id": task_id}))
                socks.append(sock)
            until(lambda: server.stats()["subscribers"] == 3, "the three subscribe")
            until(lambda: server.stats()["subscribers"] == 0,
                  "the subscribers that read nothing are dropped")
            gate.set()
    finally:
        gate.set()
        for sock in socks:
            sock.close()


def open_stream(port, task_id):
    """A SubscribeToTask stream, read up to its first event: the socket."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(request("SubscribeToTask", {"id": task_id}))
    got = b""
    while b"\ndata: " not in got:
        data = sock.recv(65536)
        assert data, got
        got += data
    assert got.startswith(b"HTTP/1.1 200"), got[:200]
    return sock


@pytest.mark.parametrize("kind", HOSTS)
def test_one_caller_opens_at_most_max_caller_streams(kind):
    # Three streams are the most this caller (one address) may have open; a
    # fourth is refused like the other per-caller limits (429, CALLER_LIMIT).
    # Once the client closes one, its slot is free again at once: no keep-alive
    # comes within the test (keepalive_interval 60 s) to find the close.
    gate = threading.Event()
    server = a2a_min.Server(gated_agent(gate), keepalive_interval=60, max_caller_streams=3)
    socks = []
    try:
        with serving(kind, server, timeout=30) as port:
            task_id = waiting_task(port)
            socks = [open_stream(port, task_id) for _ in range(3)]
            assert server.stats()["streams"] == 3
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            conn.request("POST", "/", json.dumps({"jsonrpc": "2.0", "id": 4,
                                                  "method": "SubscribeToTask",
                                                  "params": {"id": task_id}}),
                         {"A2A-Version": "1.0", "Content-Type": "application/json"})
            refused = conn.getresponse()
            error = json.loads(refused.read())["error"]
            assert refused.status == 429 and refused.getheader("Retry-After")
            assert error["data"][0]["reason"] == "CALLER_LIMIT"
            assert error["data"][0]["metadata"]["limit"] == "max_caller_streams"
            socks.pop().close()
            until(lambda: server.stats()["subscribers"] == 2, "the closed stream is let go")
            socks.append(open_stream(port, task_id))
            gate.set()
    finally:
        gate.set()
        for sock in socks:
            sock.close()


@pytest.mark.parametrize("kind", HOSTS)
def test_head_opens_no_stream_on_the_0_3_subscribe_route(kind):
    # HEAD on a streaming route is refused (405) on every binding, and the
    # connection's next answer is the next request's, not stream chunks.
    gate = threading.Event()
    server = a2a_min.Server(gated_agent(gate), compat="0.3", keepalive_interval=60)
    try:
        with serving(kind, server, timeout=30) as port:
            task_id = waiting_task(port)
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            for path in (f"/v1/tasks/{task_id}:subscribe", f"/tasks/{task_id}:subscribe"):
                headers = {} if path.startswith("/v1/") else {"A2A-Version": "1.0"}
                conn.request("HEAD", path, headers=headers)
                head = conn.getresponse()
                assert head.read() == b"" and head.status == 405, path
                assert "GET" in head.getheader("Allow")
                conn.request("GET", "/.well-known/agent-card.json")
                card = conn.getresponse()
                assert card.status == 200 and json.loads(card.read())["name"]
            assert server.stats()["subscribers"] == 0
            gate.set()
    finally:
        gate.set()


CAPPED = r"""
import asyncio, resource, sys
sys.path.insert(0, sys.argv[1])
import a2a_min
resource.setrlimit(resource.RLIMIT_NOFILE, (64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
server = a2a_min.Server(lambda ctx: "hi")
asyncio.run(a2a_min.serve_asyncio(server, "127.0.0.1", 0, max_caller_connections=4096,
                                  on_ready=lambda listener: print(
                                      listener.sockets[0].getsockname()[1], flush=True)))
"""


def test_the_asyncio_cap_stays_below_the_descriptor_limit():
    # With 64 descriptors the default max_connections (4,096) cannot be
    # reached: before, accept() failed (EMFILE) and a new client hung unanswered.
    # Now the cap is three quarters of the limit, and the next client gets 503.
    proc = subprocess.Popen([sys.executable, "-c", CAPPED, ROOT], stdout=subprocess.PIPE,
                            text=True)
    socks = []
    try:
        port = int(proc.stdout.readline())
        for _ in range(64):
            sock = socket.create_connection(("127.0.0.1", port), timeout=10)
            socks.append(sock)
            sock.sendall(b"GET /.well-known/agent-card.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            status = sock.recv(65536)[:12]
            if status != b"HTTP/1.1 200":
                break
        assert status == b"HTTP/1.1 503" and len(socks) == 64 * 3 // 4 + 1, (status, len(socks))
    finally:
        for sock in socks:
            sock.close()
        proc.kill()
        proc.wait()


def tls_server():
    """The server side of TLS with the suite's certificate."""
    import ssl
    pki = suite_pki()
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(pki["cert"], pki["key"])
    return tls


def card_over_tls(port):
    """The first bytes of the answer to GET the agent card over TLS."""
    import ssl
    client = ssl.create_default_context(cafile=suite_pki()["ca"])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, \
            client.wrap_socket(raw, server_hostname="127.0.0.1") as sock:
        sock.sendall(b"GET /.well-known/agent-card.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        return sock.recv(65536)


def test_the_asyncio_server_counts_a_tls_connection_from_accept():
    # Three clients that connect and never begin their TLS handshake hold
    # three sockets: they count against max_connections (3) at once, and the
    # next client, handshake done, is answered 503.
    server = a2a_min.Server(lambda ctx: "hi")
    with serving("asyncio", server, tls=tls_server(), max_connections=3,
                 handshake_timeout=30) as port:
        idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
        try:
            until(lambda: server.stats()["hosts"]["asyncio"]["connections"] == 3,
                  "the handshakes not begun are counted")
            assert card_over_tls(port).startswith(b"HTTP/1.1 503")
        finally:
            for sock in idle:
                sock.close()


def test_a_tls_handshake_that_never_ends_is_not_counted_for_ever():
    # asyncio ends a handshake past handshake_timeout without telling the
    # protocol: the connection counted at accept() must be let go all the same.
    server = a2a_min.Server(lambda ctx: "hi")
    with serving("asyncio", server, tls=tls_server(), max_connections=3,
                 handshake_timeout=0.2) as port:
        idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
        try:
            until(lambda: all(sock.recv(1) == b"" for sock in idle), "the handshakes end")
            until(lambda: server.stats()["hosts"]["asyncio"]["connections"] == 0,
                  "the connections are let go")
            assert card_over_tls(port).startswith(b"HTTP/1.1 200")
        finally:
            for sock in idle:
                sock.close()


def first_event(sock):
    """The first SSE event of a chunked stream on ``sock``: its id and data."""
    got = b""
    while True:
        data = sock.recv(1 << 20)
        assert data, got[:300]
        got += data
        head, _, body = got.partition(b"\r\n\r\n")
        unchunked, rest = b"", body
        while b"\r\n" in rest:                     # (chunks whole so far)
            size, _, rest = rest.partition(b"\r\n")
            size = int(size, 16)
            if len(rest) < size + 2:
                break
            unchunked, rest = unchunked + rest[:size], rest[size + 2:]
        if b"\n\n" in unchunked:
            lines = unchunked.partition(b"\n\n")[0].split(b"\n")
            return (int(lines[0][4:]), json.loads(b"".join(line[6:] for line in lines[1:])))


@pytest.mark.parametrize("kind", HOSTS)
def test_subscribers_share_one_encoding_of_a_large_task(kind):
    # A task larger than a write goes out as the one JSON both subscribers
    # share, between each one's own envelope (JSON-RPC: its request id).
    gate = threading.Event()
    server = a2a_min.Server(gated_agent(gate, big=300_000), keepalive_interval=60)
    socks = []
    try:
        with serving(kind, server, timeout=30) as port:
            task_id = waiting_task(port)
            for rid in (7, 8):
                sock = socket.create_connection(("127.0.0.1", port), timeout=10)
                socks.append(sock)
                sock.sendall(request("SubscribeToTask", {"id": task_id}, rid))
                seq, data = first_event(sock)
                assert data["id"] == rid and data["result"]["task"]["id"] == task_id
                text = data["result"]["task"]["artifacts"][0]["parts"][0]["text"]
                assert text == "x" * 300_000
            sock = socket.create_connection(("127.0.0.1", port), timeout=10)
            socks.append(sock)
            sock.sendall(f"GET /tasks/{task_id}:subscribe HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                         "A2A-Version: 1.0\r\n\r\n".encode())
            assert first_event(sock)[1]["task"]["artifacts"][0]["parts"][0]["text"] == \
                "x" * 300_000
            followers = [server.call("SubscribeToTask", {"id": task_id}) for _ in range(2)]
            assert next(followers[0])[1] is next(followers[1])[1]    # (one encoding, shared)
            for follower in followers:
                follower.close()
            gate.set()
    finally:
        gate.set()
        for sock in socks:
            sock.close()


def card_status(sock):
    sock.sendall(b"GET /.well-known/agent-card.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    return sock.recv(65536)


@pytest.mark.parametrize("kind", HOSTS)
def test_one_client_address_holds_at_most_max_caller_connections(kind):
    # Three connections are the most one address may hold (of ten): the
    # fourth is refused as a per-caller limit (429), and once one closes a
    # new one is served.
    server = a2a_min.Server(lambda ctx: "hi")
    with serving(kind, server, max_connections=10, max_caller_connections=3) as port:
        socks = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(3)]
        try:
            assert all(card_status(sock).startswith(b"HTTP/1.1 200") for sock in socks)
            with socket.create_connection(("127.0.0.1", port), timeout=10) as extra:
                got = card_status(extra)
                assert got.startswith(b"HTTP/1.1 429") and b"max_caller_connections" in got
            socks.pop().close()

            def served():
                with socket.create_connection(("127.0.0.1", port), timeout=10) as again:
                    return card_status(again).startswith(b"HTTP/1.1 200")
            until(served, "a connection closed makes room for another")
        finally:
            for sock in socks:
                sock.close()


def test_running_out_of_descriptors_is_told_once_not_a_thousand_times():
    # 150 clients at once on 64 descriptors: the refused ones hold theirs a
    # moment, accept() fails (EMFILE) and asyncio pauses it; it used to log a
    # traceback for every place in the backlog, tens of megabytes a minute.
    import selectors
    import tempfile
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([sys.executable, "-c", CAPPED, ROOT], stdout=subprocess.PIPE,
                                stderr=err, text=True)
        socks = []
        try:
            port = int(proc.stdout.readline())
            selector = selectors.DefaultSelector()
            for _ in range(150):
                sock = socket.socket()
                sock.setblocking(False)
                sock.connect_ex(("127.0.0.1", port))
                socks.append(sock)
                selector.register(sock, selectors.EVENT_READ)
            answered = set()

            def all_answered():              # (a 503, or a close: each hears back)
                for key, _ in selector.select(0.1):
                    with contextlib.suppress(OSError):
                        key.fileobj.recv(65536)
                    selector.unregister(key.fileobj)
                    answered.add(key.fileobj)
                return len(answered) >= 150 - 64 * 3 // 4
            until(all_answered, "the clients past the cap are answered", timeout=30)
        finally:
            for sock in socks:
                sock.close()
            proc.kill()
            proc.wait()
        err.seek(0)
        told = err.read().decode(errors="replace")
    assert 1 <= told.count("out of system resource") <= 2, (len(told), told[:500])
    assert "ulimit -n" in told


def test_a_head_gets_no_body_under_wsgiref():
    # The standard library's WSGI server writes whatever the application
    # returns, a HEAD's answer too: wsgi_app returns none for it.
    from wsgiref.simple_server import WSGIRequestHandler, make_server

    class Quiet(WSGIRequestHandler):
        def log_message(self, *args):
            pass
    httpd = make_server("127.0.0.1", 0, a2a_min.wsgi_app(a2a_min.Server(lambda ctx: "hi")),
                        handler_class=Quiet)
    threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
    try:
        with socket.create_connection(("127.0.0.1", httpd.server_address[1]), timeout=10) as sock:
            sock.sendall(b"HEAD /.well-known/agent-card.json HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
            got = b""
            while data := sock.recv(65536):
                got += data
        head, _, body = got.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.0 200") and b"Content-Length" in head and body == b""
    finally:
        httpd.shutdown()
        httpd.server_close()
