"""The http.server adapter on real loopback sockets, and the bad input it must
survive; also what every answer carries: the Date header, ids and timestamps;
and how both of our servers (threaded and asyncio) frame a stream."""

import json
import os
import socket
import subprocess
import sys
import threading
import time

import pytest

import a2a_min
from harness import ROOT, AsyncioHostClient, MemoryTaskStore, ThreadsHostClient, parse_sse, user_message

HEADERS = {"A2A-Version": "1.0", "Content-Type": "application/json"}


def raw_exchange(live, data, read_timeout=5, shutdown=False):
    """Send raw bytes on a new connection; return everything the server sends back."""
    sock = socket.create_connection((live.host, live.port), timeout=read_timeout)
    try:
        sock.sendall(data)
        if shutdown:
            sock.shutdown(socket.SHUT_WR)
        chunks = []
        while True:
            try:
                chunk = sock.recv(65536)
            except socket.timeout:
                break
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        sock.close()


def assert_still_serving(live):
    assert live.rpc("GetTask", {"id": "x"})["error"]["code"] == -32001


# -- the agent card and the help page ----------------------------------------

def test_agent_card_headers_etag_and_304(live):
    resp, body = live.request("GET", "/.well-known/agent-card.json")
    assert resp.status == 200
    assert resp.getheader("Content-Type") == "application/json"
    assert "max-age=" in resp.getheader("Cache-Control")
    assert resp.getheader("Access-Control-Allow-Origin") == "*"
    assert resp.getheader("Last-Modified")
    etag = resp.getheader("ETag")
    assert etag.startswith('"') and etag.endswith('"')           # a strong ETag
    card = json.loads(body)
    assert card["supportedInterfaces"] == [     # each at 1.0, then at 1.1 (the draft)
        {"url": url, "protocolBinding": binding, "protocolVersion": version}
        for version in ("1.0", "1.1")
        for binding, url in (("JSONRPC", live.url + "/"), ("HTTP+JSON", live.url))]
    for key in ("name", "description", "version", "capabilities", "defaultInputModes",
                "defaultOutputModes", "skills"):
        assert key in card
    assert "protocolVersion" not in card                          # a 0.3-era field
    again, body2 = live.request("GET", "/.well-known/agent-card.json",
                                headers={"If-None-Match": etag})
    assert again.status == 304 and body2 == b""


def test_public_url_goes_in_the_card():
    server = a2a_min.Server(lambda t: t, public_url="https://agents.example/a2a/")
    card = json.loads(server.handle_http("GET", "/.well-known/agent-card.json").body)
    assert card["supportedInterfaces"][0]["url"] == "https://agents.example/a2a/"


def test_other_responses_link_to_the_card(live):
    resp, _ = live.request("POST", "/", {"jsonrpc": "2.0", "id": 1, "method": "GetTask",
                                         "params": {"id": "x"}}, HEADERS)
    assert resp.getheader("Link") == ('</.well-known/agent-card.json>; rel="service-desc"; '
                                      'type="application/json", </.well-known/api-catalog>; '
                                      'rel="api-catalog"')


def test_help_page_plain_and_html(live):
    resp, body = live.request("GET", "/")
    assert resp.status == 200 and resp.getheader("Content-Type").startswith("text/plain")
    assert b"curl -sS " + live.url.encode() in body and b"SendMessage" in body
    resp, body = live.request("GET", "/", headers={"Accept": "text/html"})
    assert resp.getheader("Content-Type").startswith("text/html") and b"<pre>" in body


def test_jsonrpc_with_and_without_trailing_slash(live):
    for path in ("/", "//"):
        resp, body = live.request("POST", path, {"jsonrpc": "2.0", "id": 7, "method": "GetTask",
                                                 "params": {"id": "x"}}, HEADERS)
        assert resp.status == 200 and json.loads(body)["id"] == 7


def test_unknown_path_and_wrong_verb(live):
    resp, body = live.request("GET", "/nothing/here")
    assert resp.status == 404 and "JSON-RPC is at /" in json.loads(body)["error"]["message"]
    resp, _ = live.request("DELETE", "/")
    assert resp.status == 405 and "POST" in resp.getheader("Allow")


# -- operations over real sockets -------------------------------------------------

def test_keep_alive_connection_serves_many_calls(live):
    conn = live.connection()
    for i in range(20):
        answer = live.rpc("SendMessage", {"message": user_message(f"n{i}")}, conn=conn)
        assert answer["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    conn.close()


def test_sse_stream_over_a_socket(live):
    conn = live.connection()
    conn.request("POST", "/", json.dumps({"jsonrpc": "2.0", "id": "s", "method":
                 "SendStreamingMessage", "params": {"message": user_message("chunks")}}), HEADERS)
    resp = conn.getresponse()
    assert resp.status == 200 and resp.getheader("Content-Type") == "text/event-stream"
    events = parse_sse(resp.read())
    states = [e[1]["result"].get("statusUpdate", {}).get("status", {}).get("state") for e in events]
    assert "task" in events[0][1]["result"]
    assert states[-1] == "TASK_STATE_COMPLETED"
    assert all(e[1]["id"] == "s" for e in events)


def open_stream(live, text):
    """A raw socket on which SendStreamingMessage(text) was just sent."""
    sock = socket.create_connection((live.host, live.port), timeout=5)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
                       "params": {"message": user_message(text)}}).encode()
    sock.sendall(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nA2A-Version: 1.0\r\nContent-Type: "
                 b"application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    return sock


def test_first_sse_event_is_not_held_back(live):
    """Nagle is off: the first event arrives while the agent is still working."""
    sock = open_stream(live, "slow1")
    data = b""
    started = time.monotonic()
    while b"TASK_STATE_WORKING" not in data:
        data += sock.recv(65536)
    assert time.monotonic() - started < 0.5           # long before the agent's 1 s is over
    sock.close()


def test_client_vanishing_mid_stream_leaves_the_task_running(live):
    sock = open_stream(live, "slow0.3")
    data = b""
    while b'"task"' not in data:
        data += sock.recv(65536)
    task_id = json.loads(data.split(b"data: ")[1].split(b"\n")[0])["result"]["task"]["id"]
    sock.close()                                      # gone, mid-stream
    time.sleep(0.6)
    task = live.rpc("GetTask", {"id": task_id})["result"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert_still_serving(live)


def test_400_concurrent_sends_from_8_threads_lose_no_task(live):
    ids, lock, errors = [], threading.Lock(), []

    def worker():
        conn = live.connection()
        try:
            for _ in range(50):
                task = live.rpc("SendMessage", {"message": user_message("x")}, conn=conn)
                with lock:
                    ids.append(task["result"]["task"]["id"])
        except Exception as exc:            # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            conn.close()

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors and len(set(ids)) == 400
    for task_id in ids[::37]:
        assert live.rpc("GetTask", {"id": task_id})["result"]["status"]["state"] == "TASK_STATE_COMPLETED"


# -- bad input --------------------------------------------------------------------

def post(live, body, headers=HEADERS):
    return live.request("POST", "/", body, headers)


def test_invalid_json_is_a_parse_error_with_null_id(live):
    resp, body = post(live, b'{"jsonrpc": "2.0", "id": 1, "method": ')
    answer = json.loads(body)
    assert resp.status == 200 and answer["id"] is None and answer["error"]["code"] == -32700
    assert_still_serving(live)


def test_invalid_utf8_is_a_parse_error(live):
    _, body = post(live, b'{"jsonrpc": "2.0", "id": 1, "method": "\xff\xfe"}')
    assert json.loads(body)["error"]["code"] == -32700


def test_huge_body_is_413_before_it_is_read(live):
    sock = socket.create_connection((live.host, live.port), timeout=5)
    sock.sendall(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                 b"Content-Length: 20000000\r\n\r\n" + b"x" * 65536)
    data = sock.recv(65536)
    sock.close()
    assert data.startswith(b"HTTP/1.1 413")
    answer = json.loads(data.split(b"\r\n\r\n", 1)[1])
    assert answer["error"]["code"] == -32600 and "20000000" in answer["error"]["message"]
    assert_still_serving(live)


def test_deep_nesting_is_a_clear_error(live):
    resp, body = post(live, b"[" * 100_000 + b"]" * 100_000)
    assert resp.status == 200
    assert json.loads(body)["error"]["code"] in (-32700, -32600)
    nested = b'{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"metadata":' \
             + b'{"a":' * 50_000 + b"1" + b"}" * 50_000 + b"}}"
    resp, body = post(live, nested)
    assert json.loads(body)["error"]["code"] == -32700
    assert_still_serving(live)


def test_body_shorter_than_content_length_times_out_cleanly(live):
    data = raw_exchange(live, b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{}",
                        read_timeout=6)
    assert data.startswith(b"HTTP/1.1 408")
    assert b"Content-Length" in data and b"did not arrive" in data
    assert_still_serving(live)


def test_client_that_trickles_its_headers_is_dropped(live):
    sock = socket.create_connection((live.host, live.port), timeout=10)
    sock.sendall(b"POST / HTTP/1.1\r\n")
    closed = False
    started = time.monotonic()
    try:
        for _ in range(20):                  # one header line every 0.5 s, forever
            sock.sendall(b"X-Slow: 1\r\n")
            assert_still_serving(live)       # others are served meanwhile
            time.sleep(0.5)
    except OSError:
        closed = True
    finally:
        sock.close()
    assert closed and time.monotonic() - started < 8


def test_batch_is_an_invalid_request(live):
    _, body = post(live, [{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}])
    error = json.loads(body)["error"]
    assert error["code"] == -32600 and "batch" in error["message"]


@pytest.mark.parametrize("envelope, code", [
    ({"jsonrpc": "1.0", "id": 1, "method": "GetTask"}, -32600),
    ({"id": 1, "method": "GetTask"}, -32600),
    ({"jsonrpc": "2.0", "method": "GetTask", "params": {}}, -32600),
    ({"jsonrpc": "2.0", "id": 1.5, "method": "GetTask"}, -32600),
    ({"jsonrpc": "2.0", "id": 1, "method": 5}, -32600),
    ({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": [1]}, -32602),
    ({"jsonrpc": "2.0", "id": 1, "method": "Nope"}, -32601),
    ("a string", -32600),
    (None, -32600),
])
def test_malformed_envelopes(live, envelope, code):
    _, body = post(live, json.dumps(envelope).encode())
    assert json.loads(body)["error"]["code"] == code


@pytest.mark.parametrize("params, field", [
    ({"message": "hi"}, "message"),
    ({"message": {"messageId": 1, "role": "ROLE_USER", "parts": [{"text": "x"}]}}, "message.messageId"),
    ({"message": {"messageId": "m", "role": "ROLE_NOBODY", "parts": [{"text": "x"}]}}, "message.role"),
    ({"message": {"messageId": "m", "role": "ROLE_USER", "parts": {}}}, "message.parts"),
    ({"message": {"messageId": "m", "role": "ROLE_USER", "parts": []}}, "message.parts"),
    ({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{}]}}, "message.parts[0]"),
    ({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "a", "url": "b"}]}},
     "message.parts[0]"),
    ({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"raw": "%%%"}]}},
     "message.parts[0].raw"),
    ({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}],
                  "metadata": []}}, "message.metadata"),
    ({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}]},
      "configuration": {"returnImmediately": "yes"}}, "configuration.returnImmediately"),
    ({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}]},
      "configuration": {"historyLength": "many"}}, "configuration.historyLength"),
])
def test_wrong_types_name_the_field(live, params, field):
    answer = live.rpc("SendMessage", params)
    error = answer["error"]
    assert error["code"] == -32602
    violations = [d for d in error["data"] if d["@type"].endswith("BadRequest")]
    assert violations[0]["fieldViolations"][0]["field"] == field


def test_wrong_content_type_names_the_fix(live):
    resp, body = live.request("POST", "/", b"{}", {"Content-Type": "text/plain",
                                                    "A2A-Version": "1.0"})
    error = json.loads(body)["error"]
    assert error["code"] == -32005 and "application/json" in error["message"]


def test_chunked_request_body(live):
    body = json.dumps({"jsonrpc": "2.0", "id": 3, "method": "GetTask", "params": {"id": "x"}}).encode()
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    data = raw_exchange(live, b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nA2A-Version: 1.0\r\n"
                        b"Content-Type: application/json\r\n"
                        b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n" + chunked)
    assert b'"code":-32001' in data


def test_garbage_request_line(live):
    data = raw_exchange(live, b"HELLO\r\n\r\n")
    assert data.startswith(b"HTTP/1.1 400")
    assert_still_serving(live)


# -- the file stands alone ------------------------------------------------------------

def test_runs_without_site_packages():
    """python -I -S a2a_min.py serves: nothing outside the standard library is needed."""
    proc = subprocess.Popen([sys.executable, "-I", "-S", "a2a_min.py", "--port", "0"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        line = proc.stdout.readline()
        assert "http://127.0.0.1:" in line, line
        port = int(line.split("http://127.0.0.1:")[1].split("/")[0])
        import http.client
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("POST", "/", json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                                              "params": {"message": user_message("hi")}}), HEADERS)
        answer = json.loads(conn.getresponse().read())
        assert answer["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
        assert "You said: hi" in "".join(
            p["text"] for p in answer["result"]["task"]["artifacts"][0]["parts"])
    finally:
        proc.terminate()
        proc.wait(10)


def test_imports_only_the_standard_library():
    """a2a_min.py imports the standard library and nothing else: it reaches
    its companions (a2a_store, a2a_cli, a2a_v03...) through _companion()
    only, when asked for (tests/test_architecture.py holds the whole graph)."""
    import ast
    tree = ast.parse(open(f"{ROOT}/a2a_min.py", encoding="utf-8").read())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.add(node.module.split(".")[0])
    assert names and names <= set(sys.stdlib_module_names), names - set(sys.stdlib_module_names)


# -- HTTP+JSON over the socket ---------------------------------------------------------

def test_rest_round_trip_over_a_socket(live):
    resp, body = live.request("POST", "/message:send", {"message": user_message("rest")}, HEADERS)
    task = json.loads(body)["task"]
    assert resp.status == 200 and task["status"]["state"] == "TASK_STATE_COMPLETED"
    resp, body = live.request("GET", f"/tasks/{task['id']}?historyLength=0", headers=HEADERS)
    assert resp.status == 200 and "history" not in json.loads(body)
    resp, body = live.request("GET", "/tasks/%2e%2e%2F%2e%2e", headers=HEADERS)
    assert resp.status == 404 and json.loads(body)["error"]["status"] == "NOT_FOUND"


def test_huge_query_string_is_414_and_the_server_goes_on(live):
    data = raw_exchange(live, b"GET /tasks?" + b"a=1&" * 20000 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    assert data.startswith(b"HTTP/1.1 414")
    assert b'"code":414' in data
    assert_still_serving(live)


def test_too_many_headers_is_431(live):
    data = raw_exchange(live, b"GET /tasks HTTP/1.1\r\n" + b"X-A: 1\r\n" * 200 + b"\r\n")
    assert data.startswith(b"HTTP/1.1 431")
    assert_still_serving(live)


# -- the Date header, ids and timestamps ----------------------------------------------

@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX's")
def test_a_forked_process_makes_ids_of_its_own():
    """A server's id pool, used before os.fork() (a host forking workers
    after the app served), is not the child's: parent and child share no
    random part of an id, so no id, even in the same millisecond."""
    pool = a2a_min._Ids()
    pool()                                      # the pool is filled, and half used
    read, write = os.pipe()
    child = os.fork()
    if child == 0:
        try:
            os.close(read)
            os.write(write, " ".join(pool() for _ in range(20)).encode())
        finally:
            os._exit(0)
    os.close(write)
    mine = [pool() for _ in range(20)]
    with os.fdopen(read) as pipe:
        theirs = pipe.read().split()
    os.waitpid(child, 0)
    assert len(theirs) == 20
    assert not {one[15:] for one in mine} & {one[15:] for one in theirs}


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
    pool = a2a_min._Ids()
    before = int(time.time() * 1000)
    made = [a2a_min._new_id() for _ in range(1000)] + [pool() for _ in range(1000)]
    after = int(time.time() * 1000)
    assert len(set(made)) == 2000
    for one in made:                           # version 7 (RFC 9562): the time, then 74 random bits
        parsed = uuid.UUID(one)
        assert str(parsed) == one and parsed.version == 7 and parsed.variant == uuid.RFC_4122
        assert before <= parsed.int >> 80 <= after
    assert len({one[15:] for one in made}) == 2000     # (the random part alone tells them apart)
    time.sleep(0.002)
    assert pool() > made[-1] and a2a_min._new_id() > made[999]   # later ids sort after
    import re
    clock = a2a_min._Clock()
    for now in (a2a_min._Clock(), clock, clock):
        stamp = now()
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", stamp), stamp
        assert abs(a2a_min._parse_timestamp(stamp)[0] - time.time()) < 2
    earlier = clock()
    time.sleep(0.002)
    assert clock() > earlier                   # milliseconds move on within the second


# -- a stream on a kept connection -----------------------------------------------

def _dechunked(data):
    """The bytes of a chunked body (RFC 9112 section 7.1), which must end with its last chunk."""
    body = b""
    while True:
        size, _, data = data.partition(b"\r\n")
        size = int(size, 16)
        if size == 0:
            assert data == b"\r\n", data
            return body
        assert data[size:size + 2] == b"\r\n"
        body, data = body + data[:size], data[size + 2:]


@pytest.mark.parametrize("host", [ThreadsHostClient, AsyncioHostClient],
                         ids=["threads", "asyncio"])
def test_a_stream_is_chunked_and_its_connection_kept(host):
    """Both of our servers send a stream to an HTTP/1.1 client in chunks and
    keep the connection for its next request (a new connection per stream cost
    more than the stream); to an HTTP/1.0 client, which cannot read chunks, or
    one that says Connection: close, the stream runs to the connection's close."""
    client = host(a2a_min.demo_server())
    def request(version=b"HTTP/1.1", extra=b""):        # (a message of its own each)
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
                           "params": {"message": user_message("hello")}}).encode()
        return (b"POST / %s\r\nHost: 127.0.0.1\r\nA2A-Version: 1.0\r\nContent-Type: "
                b"application/json\r\n%sContent-Length: %d\r\n\r\n%s"
                % (version, extra, len(body), body))
    try:
        with socket.create_connection(("127.0.0.1", client.port), timeout=10) as sock:
            for _ in range(2):                       # two streams, then a GET, on one connection
                sock.sendall(request())
                data = b""
                while not data.endswith(b"\r\n0\r\n\r\n"):
                    more = sock.recv(65536)
                    assert more, data
                    data += more
                head, chunked = data.split(b"\r\n\r\n", 1)
                assert b"Transfer-Encoding: chunked" in head and b"Connection: close" not in head
                events = parse_sse(_dechunked(chunked))
                assert events[-1][1]["result"]["statusUpdate"]["status"]["state"] == \
                    "TASK_STATE_COMPLETED"
            sock.sendall(b"GET /.well-known/agent-card.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            assert sock.recv(65536).startswith(b"HTTP/1.1 200")
        for version, extra in ((b"HTTP/1.0", b""), (b"HTTP/1.1", b"Connection: close\r\n")):
            with socket.create_connection(("127.0.0.1", client.port), timeout=10) as sock:
                sock.sendall(request(version, extra))
                data = b""
                while more := sock.recv(65536):      # (up to the close)
                    data += more
            head, rest = data.split(b"\r\n\r\n", 1)
            assert b"Connection: close" in head and b"Transfer-Encoding" not in head, head
            assert b"TASK_STATE_COMPLETED" in rest and rest.endswith(b"\n\n")
    finally:
        client.close()


@pytest.mark.parametrize("host", [ThreadsHostClient, AsyncioHostClient],
                         ids=["threads", "asyncio"])
def test_a_short_stream_goes_out_in_one_write_with_its_head_and_its_end(host, monkeypatch):
    """What a stream has ready when its head is written goes in the same
    write, and so does its last chunk with the frames before it: a short
    stream (the task, its answer, COMPLETED) is one write where it was
    three (head, frames, end), and one packet for the client to read. On
    the threaded server the turn runs on a worker thread, which may not
    have answered when the head is written: then two."""
    async def agent(ctx):
        return "hello"
    client = host(a2a_min.Server(agent, store=MemoryTaskStore()))   # (in every store pass)
    sends = []
    for name in ("send", "sendall"):
        original = getattr(socket.socket, name)

        def counted(sock, data, *args, _original=original):
            if sock.family != socket.AF_UNIX and sock.getsockname()[1] == client.port:
                sends.append(bytes(data))
            return _original(sock, data, *args)
        monkeypatch.setattr(socket.socket, name, counted)
    try:
        with socket.create_connection(("127.0.0.1", client.port), timeout=10) as sock:
            for _ in range(3):
                body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
                                   "params": {"message": user_message("hello")}}).encode()
                sends.clear()
                sock.sendall(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nA2A-Version: 1.0\r\n"
                             b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                             % (len(body), body))
                data = b""
                while not data.endswith(b"\r\n0\r\n\r\n"):
                    more = sock.recv(65536)
                    assert more, data
                    data += more
                assert b"".join(sends) == data
                assert len(sends) == 1 if host is AsyncioHostClient else len(sends) <= 2, sends
                events = parse_sse(_dechunked(data.split(b"\r\n\r\n", 1)[1]))
                assert [seq for seq, _ in events] == [0, 1, 2]
                assert events[-1][1]["result"]["statusUpdate"]["status"]["state"] == \
                    "TASK_STATE_COMPLETED"
    finally:
        client.close()
