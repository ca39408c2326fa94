"""The one HTTP/1.1 reader (a2a_min._RequestReader) without sockets, then the
framing attacks it must refuse, over real sockets, on every host that reads
requests with it: the threaded server, the asyncio server and the local Lambda
runner (gunicorn and uvicorn read with their own parsers; see
test_bad_input_hosts.py for those).

Every refusal is a clear error and a closed connection; the server goes on
serving other clients, with no thread or connection left behind."""

import json
import socket
import sys
import time

import pytest

import a2a_min
from harness import ROOT, exchange, free_port, run_host, usage

Reader = a2a_min._RequestReader


def read_all(data, **limits):
    """Feed ``data`` to a reader whole; return (requests, leftover)."""
    reader, buffer, out = Reader(**limits), bytearray(data), []
    while (request := reader.read(buffer)) is not None:
        out.append(request)
    return out, bytes(buffer)


def refused(data, **limits):
    with pytest.raises(a2a_min._BadRequest) as info:
        read_all(data, **limits)
    return info.value.status


# -- the reader, without sockets ------------------------------------------------

def test_a_request_in_pieces_and_pipelined_ones():
    two = (b"POST /a?b=1 HTTP/1.1\r\nHost: x\r\nX-A: 1\r\nx-a: 2\r\nContent-Length: 4\r\n\r\nBODY"
           b"GET /2 HTTP/1.1\r\nHost: x\r\n\r\n")
    reader, buffer, got = Reader(), bytearray(), []
    for byte in two:                                   # a byte at a time: the same requests
        buffer.append(byte)
        request = reader.read(buffer)
        if request is not None:
            got.append(request)
    assert [(r.method, r.target, r.body) for r in got] == [("POST", "/a?b=1", b"BODY"),
                                                             ("GET", "/2", b"")]
    assert got[0].headers == {"host": "x", "x-a": "1, 2", "content-length": "4"}
    assert got[0].keep_alive and buffer == b""
    requests, rest = read_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.0\r\n\r\n")
    assert [r.keep_alive for r in requests] == [True, False] and rest == b""
    assert read_all(b"\r\nGET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")[0][
        0].keep_alive is False


@pytest.mark.parametrize("head", [
    b"GET / HTTP/1.1\nHost: x\n\n",                 # every line
    b"GET / HTTP/1.1\r\nHost: x\n\r\n",             # one header line
    b"GET / HTTP/1.1\r\nHost: x\r\n\n",             # the blank line
    b"GET / HTTP/1.1\r\n\n\r\n",                    # a bare LF blank line, then CRLF
    b"GET / HTTP/1.1\nHost: x\r\n\r\n",             # the request line
])
def test_a_head_with_a_bare_lf_is_refused_however_it_arrives(head):
    """RFC 9112 section 2.2 lets a server read a bare LF as CRLF; proxies differ
    on it, and a request two parsers split differently is how requests are
    smuggled: refused with 400, whatever pieces the bytes come in (and never
    left waiting for a CRLF blank line that is not coming)."""
    for size in range(1, len(head) + 1):
        reader, buffer = Reader(), bytearray()
        with pytest.raises(a2a_min._BadRequest) as info:
            for at in range(0, len(head), size):
                buffer += head[at:at + size]
                assert reader.read(buffer) is None
        assert info.value.status == 400 and "bare LF" in info.value.error.message, size


def test_chunked_bodies_with_extensions_and_trailers():
    body = b"5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\nTrailer: x\r\n\r\nNEXT"
    head = b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    requests, rest = read_all(head + body)
    assert requests[0].body == b"hello, world" and rest == b"NEXT"
    for cut in range(len(head), len(head + body) - 4):     # any prefix: not yet
        assert read_all((head + body)[:cut])[0] == []
    assert read_all(head + b"A ; name=value\r\n0123456789\r\n0\r\n\r\n")[0][0].body == b"0123456789"


@pytest.mark.parametrize("size", [b"-6", b"+3a", b"0x3a", b"3_a", b" 3a", b"3a ", b"",
                                  b"1" * 17, b"z", b"\xb2"])
def test_chunk_sizes_are_hex_digits_only(size):
    head = b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    assert refused(head + size + b"\r\n" + b"x" * 60 + b"\r\n0\r\n\r\n") == 400


@pytest.mark.parametrize("line", [b"5;a\nxx", b"5;a\rb", b"5;a\x00", b'5;a="x"'])
def test_chunk_extensions_hold_no_control_characters_or_quotes(line):
    head = b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    assert refused(head + line + b"\r\nhello\r\n0\r\n\r\n") == 400


@pytest.mark.parametrize("trailer", [b"X: a\nGET /smuggled HTTP/1.1", b"X: a\x00b", b"X: a\rb"])
def test_trailers_hold_no_control_characters(trailer):
    head = b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    assert refused(head + b"5\r\nhello\r\n0\r\n" + trailer + b"\r\n\r\n") == 400


def test_a_body_of_many_tiny_chunks_is_refused_and_held_once():
    head = b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    assert refused(head + b"1\r\na\r\n" * 20000 + b"0\r\n\r\n") == 400
    reader, buffer = Reader(), bytearray(head + b"2\r\naa\r\n" * 1000)
    assert reader.read(buffer) is None and buffer == b""       # read chunks leave the buffer


def test_the_crlf_after_chunk_data_is_checked():
    head = b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    assert refused(head + b"3\r\nabcXX0\r\n\r\n") == 400


def test_bounded_chunk_lines_trailers_and_bodies():
    head = b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    assert refused(head + b"5;" + b"e" * 2000) == 400                  # an endless extension
    assert refused(head + b"0\r\n" + b"T: x\r\n" * 20000 + b"\r\n") == 400   # endless trailers
    assert refused(head + b"ff\r\n" + b"x" * 255 + b"\r\n0\r\n\r\n", max_body_bytes=100) == 413
    assert refused(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 101\r\n\r\n",
                   max_body_bytes=100) == 413


@pytest.mark.parametrize("coding, status", [
    (b"xchunked", 501), (b"gzip, chunked", 501), (b"gzip", 400), (b"chunked, identity", 400),
    (b"chunked, chunked", 400), (b"identity", 501)])
def test_transfer_codings(coding, status):
    data = b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: " + coding + b"\r\n\r\n0\r\n\r\n"
    assert refused(data) == status


@pytest.mark.parametrize("head", [
    b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
    b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
    b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n",
    b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3, 4\r\n\r\n",
    b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -3\r\n\r\n",
    b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: \xb2\r\n\r\n",         # a superscript two
    b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0x10\r\n\r\n",
    b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
    b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding : chunked\r\n\r\n",   # space before colon
    b"POST / HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n folded: on\r\n\r\n",         # an obsolete fold
    b"POST / HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n",                    # a NUL byte
    b"POST / HTTP/1.1\r\nHost: x\r\nX-A: a\rb\r\n\r\n",                      # a bare CR
    b"GET  / HTTP/1.1\r\nHost: x\r\n\r\n", b"GET / HTTP/2.0\r\n\r\n",
    b"G(T / HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET /a\rb HTTP/1.1\r\nHost: x\r\n\r\n", b"GET /a\tb HTTP/1.1\r\nHost: x\r\n\r\n",
    b"NONSENSE\r\n\r\n", b"GET / HTTP/1.1\r\nHost: x\r\nNoColon\r\n\r\n"])
def test_ambiguous_framing_and_malformed_heads_are_400(head):
    assert refused(head + b"abcd") == 400


def test_identical_duplicate_content_lengths_are_one():
    requests, rest = read_all(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n"
                              b"content-length: 3\r\n\r\nabcZ")
    assert requests[0].body == b"abc" and rest == b"Z"


def test_an_http_1_1_request_names_its_host_once():
    """RFC 9112 section 3.2: 400 for an HTTP/1.1 request without Host, or with
    two (which of them would the server check, and which build the card's
    URLs?). HTTP/1.0 may leave it out."""
    assert refused(b"GET / HTTP/1.1\r\n\r\n") == 400
    assert refused(b"GET / HTTP/1.1\r\nHost: localhost\r\nhost: evil.example\r\n\r\n") == 400
    assert refused(b"GET / HTTP/1.0\r\nHost: a\r\nHost: a\r\n\r\n") == 400
    with pytest.raises(a2a_min._BadRequest) as info:
        read_all(b"POST / HTTP/1.1\r\nContent-Length: 0\r\n\r\n")
    assert "Host" in info.value.error.message
    assert read_all(b"GET / HTTP/1.0\r\n\r\n")[0][0].headers == {}


def test_head_limits_414_and_431():
    assert refused(b"GET /" + b"a" * 70000) == 414
    assert refused(b"GET /?" + b"a" * 70000 + b" HTTP/1.1\r\nHost: x\r\n\r\n") == 414
    assert refused(b"GET / HTTP/1.1\r\nHost: x\r\n" + b"X: y\r\n" * 200 + b"\r\n") == 431
    assert refused(b"GET / HTTP/1.1\r\nHost: x\r\nX: " + b"y" * 70000 + b"\r\n\r\n") == 431


def test_expect_100_continue_is_flagged_until_the_body_arrives():
    reader = Reader()
    buffer = bytearray(b"POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                       b"Content-Length: 2\r\n\r\n")
    assert reader.read(buffer) is None and reader.expects_continue
    buffer += b"ok"
    assert reader.read(buffer).body == b"ok" and not reader.expects_continue


# -- over real sockets, on every host that uses the reader --------------------------

HOST = "import sys; sys.path.insert(0, {root!r}); import a2a_min\nserver = a2a_min.demo_server()\n"
HOSTS = {
    "via_threads": lambda port: [sys.executable, "-c", HOST.format(root=ROOT) + (
        f"a2a_min.make_http_server(server, '127.0.0.1', {port}, timeout=2, "
        "max_connections=40, max_caller_connections=40).serve_forever()")],
    "via_asyncio": lambda port: [sys.executable, "-c", HOST.format(root=ROOT) + (
        "import asyncio\n"
        f"asyncio.run(a2a_min.serve_asyncio(server, '127.0.0.1', {port}, timeout=2, "
        "max_connections=40, max_caller_connections=40))")],
    "via_lambda": lambda port: [sys.executable, "examples/lambda_local.py", str(port)],
}
SEND = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
    "messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}}).encode()
HEADERS = b"Host: 127.0.0.1\r\nA2A-Version: 1.0\r\nContent-Type: application/json\r\n"


def start(name):
    port = free_port()
    proc = run_host(HOSTS[name](port), port)
    try:
        yield name, port, proc.pid
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture(params=sorted(HOSTS))
def host(request):
    yield from start(request.param)


@pytest.fixture(params=["via_threads", "via_asyncio"])
def server_host(request):
    """Our own servers (the Lambda runner stands for API Gateway: 30 s, no cap)."""
    yield from start(request.param)


def served(port):
    got = exchange(port, b"POST / HTTP/1.1\r\n" + HEADERS + b"Connection: close\r\n"
                   b"Content-Length: %d\r\n\r\n%s" % (len(SEND), SEND), timeout=5)
    return got.startswith(b"HTTP/1.1 200") and b"TASK_STATE_COMPLETED" in got


ATTACKS = [  # (what is sent after the head's first line, status)
    (b"Transfer-Encoding: chunked\r\n\r\n-6\r\nabc\r\n0\r\n\r\n", 400),   # froze the loop
    (b"Transfer-Encoding: chunked\r\n\r\n-1\r\n" + b"x" * 5000, 400),     # read to the end
    (b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1"
     b"\r\n\r\n", 400),
    (b"Transfer-Encoding: xchunked\r\n\r\n0\r\n\r\n", 501),
    (b"Transfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n", 400),
    (b"Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 501),
    (b"Transfer-Encoding : chunked\r\n\r\n0\r\n\r\n", 400),
    (b"X-A: 1\r\n folded: 2\r\nContent-Length: 0\r\n\r\n", 400),
    (b"Transfer-Encoding: chunked\r\n\r\n3\r\nabcXY0\r\n\r\n", 400),
    (b"Content-Length: \xc2\xb2\r\n\r\n", 400),
    (b"Content-Length: 0\nX-A: 1\r\n\r\n", 400),                        # a bare LF
    (b"Content-Length: 0\r\n\nGET /smuggled HTTP/1.1\r\n\r\n", 400),   # a bare LF blank line
    (b"Host: evil.example\r\nContent-Length: 0\r\n\r\n", 400),       # a second Host
]


@pytest.mark.parametrize("attack, status", ATTACKS, ids=range(len(ATTACKS)))
def test_framing_attacks_are_refused_and_the_connection_closed(host, attack, status):
    name, port, _ = host
    got = exchange(port, b"POST / HTTP/1.1\r\n" + HEADERS + attack, timeout=5)
    assert got.startswith(b"HTTP/1.1 %d" % status), got[:200]
    assert got.count(b"HTTP/1.1 ") == 1                 # nothing smuggled was answered
    assert served(port)                                 # and everyone else is still served


def test_host_is_required_on_http_1_1_and_optional_on_http_1_0(server_host):
    _, port, _ = server_host
    card = b"GET /.well-known/agent-card.json HTTP/1.%d\r\nConnection: close\r\n\r\n"
    got = exchange(port, card % 1, timeout=5)
    assert got.startswith(b"HTTP/1.1 400") and b"Host" in got, got[:300]
    got = exchange(port, card % 0, timeout=5)
    assert got.startswith(b"HTTP/1.") and b" 200 " in got[:20], got[:300]
    assert served(port)


def test_a_trickling_client_is_cut_off_within_the_request_deadline(server_host):
    name, port, pid = server_host
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        started = time.monotonic()
        sock.sendall(b"POST / HTTP/1.1\r\n" + HEADERS + b"Content-Length: 100\r\n\r\n")
        got = b""
        while time.monotonic() - started < 8:
            try:
                sock.sendall(b"x")                     # a byte of body every 0.2 s
            except OSError:
                break
            sock.settimeout(0.2)
            try:
                chunk = sock.recv(65536)
            except socket.timeout:
                continue
            if not chunk:
                break
            got += chunk
        assert got.startswith(b"HTTP/1.1 408")
        assert time.monotonic() - started < 5           # the timeout is 2 s for the whole request


def test_connections_past_the_cap_get_503_and_cost_no_thread(server_host):
    name, port, pid = server_host
    time.sleep(0.5)                 # the start-up probe's connection has gone (it counts)
    idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(40)]
    try:
        deadline = time.monotonic() + 5
        while usage(pid)[0] < 40:                      # every one accepted
            assert time.monotonic() < deadline
            time.sleep(0.05)
        _, threads = usage(pid)
        extra = []
        for i in range(20):
            extra.append(socket.create_connection(("127.0.0.1", port), timeout=5))
            if i % 2:                                   # a client that sends at once
                extra[-1].sendall(b"GET /.well-known/agent-card.json HTTP/1.1\r\nHost: x\r\n\r\n")
        for sock in extra:
            got = sock.recv(65536)
            assert got.startswith(b"HTTP/1.1 503") and b"Retry-After: 1" in got, got[:100]
            assert b"max_connections" in got
            sock.close()
        assert usage(pid)[1] <= threads + 1             # no thread per refused connection
    finally:
        for sock in idle:
            sock.close()
    deadline = time.monotonic() + 5
    while not served(port):                            # slots free again once they close
        assert time.monotonic() < deadline
        time.sleep(0.1)
